SELECT * FROM image_builds WHERE context_hash = %(context_hash)s
