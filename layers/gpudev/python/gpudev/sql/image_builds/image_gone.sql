-- A succeeded build whose image ECR no longer has (its lifecycle expired it): failed as if
-- long ago (the epoch), so that any ask builds it again.
UPDATE image_builds SET
    status = 'failed', phase = 'image expired', image_digest = NULL, size_bytes = NULL,
    log_tail = 'the built image is no longer in ECR: it is built again', finished_at = to_timestamp(0)
WHERE context_hash = %(context_hash)s AND status = 'succeeded'
RETURNING *
