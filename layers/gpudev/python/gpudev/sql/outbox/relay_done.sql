-- After the relay's sends, in the batch's transaction: what was sent is deleted, what the
-- queue refused is counted and waits for the next run.
WITH sent AS (
    DELETE FROM outbox WHERE outbox_id = ANY(%(sent)s::uuid[])
    RETURNING outbox_id
),
refused AS (
    UPDATE outbox SET relay_attempts = relay_attempts + 1, last_attempt_at = now()
    WHERE outbox_id = ANY(%(refused)s::uuid[])
    RETURNING outbox_id
)
SELECT (SELECT count(*) FROM sent)::integer AS sent, (SELECT count(*) FROM refused)::integer AS refused
