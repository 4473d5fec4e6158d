-- StartBuild answered: the build's id (only on the claim it answers).
UPDATE image_builds SET build_id = %(build_id)s, phase = %(phase)s
WHERE context_hash = %(context_hash)s AND status = 'building' AND build_id IS NULL
RETURNING *
