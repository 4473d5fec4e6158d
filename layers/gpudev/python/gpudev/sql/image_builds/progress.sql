-- A running build's phase or step, as CodeBuild and its log last said.
UPDATE image_builds SET phase = %(phase)s
WHERE context_hash = %(context_hash)s AND build_id = %(build_id)s AND status = 'building'
RETURNING *
