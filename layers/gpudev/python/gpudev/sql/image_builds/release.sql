-- StartBuild refused our claim: the row is failed at once, as if long ago (the epoch), so
-- that the next ask, whenever it was made and whatever its retry wait, claims it again.
UPDATE image_builds SET
    status = 'failed', phase = 'not started', log_tail = 'CodeBuild did not start the build',
    finished_at = to_timestamp(0)
WHERE context_hash = %(context_hash)s AND status = 'building' AND build_id IS NULL
  AND claimed_at = %(claimed_at)s
RETURNING *
