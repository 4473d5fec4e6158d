-- Claim the build of a context: a new row (building), or a failed one finished before
-- `retry_failed_before` (a rebuild), or a claim whose StartBuild never answered within
-- `claim_seconds` (its caller died between the claim and the call; the window is at least
-- the functions' timeout, so a slow StartBuild is never claimed twice). The row when ours
-- to start; none when a build exists that stands (building, succeeded, or failed and not
-- retried).
INSERT INTO image_builds AS b (context_hash) VALUES (%(context_hash)s)
ON CONFLICT (context_hash) DO UPDATE SET
    status = 'building', build_id = NULL, phase = NULL, log_tail = NULL,
    finished_at = NULL, claimed_at = now()
WHERE (b.status = 'failed' AND b.finished_at < %(retry_failed_before)s)
   OR (b.status = 'building' AND b.build_id IS NULL
       AND b.claimed_at < now() - make_interval(secs => %(claim_seconds)s))
RETURNING b.*
