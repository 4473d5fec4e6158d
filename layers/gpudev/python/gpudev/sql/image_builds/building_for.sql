-- How many of the user's contexts are being built now (the per-user cap).
SELECT count(*) FROM image_builds b
JOIN image_build_owners o ON o.context_hash = b.context_hash
WHERE o.user_id = %(username)s AND b.status = 'building'
