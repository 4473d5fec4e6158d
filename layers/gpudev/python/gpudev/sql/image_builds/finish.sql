-- The build ended: succeeded (its digest and size) or failed (its log's tail).
UPDATE image_builds SET
    status = %(status)s, phase = %(phase)s, image_digest = %(image_digest)s,
    size_bytes = %(size_bytes)s, log_tail = %(log_tail)s, finished_at = now()
WHERE context_hash = %(context_hash)s AND build_id = %(build_id)s AND status = 'building'
RETURNING *
