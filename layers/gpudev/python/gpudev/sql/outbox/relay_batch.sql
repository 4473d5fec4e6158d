-- The relay's batch: outbox rows older than a few seconds (the API deletes what it sent
-- within milliseconds of its commit), oldest first, locked for this transaction. SKIP
-- LOCKED: rows another relay holds are its to send, never sent twice at once.
SELECT outbox_id, payload, relay_attempts
FROM outbox
WHERE created_at < now() - make_interval(secs => %(older_than_seconds)s)
ORDER BY created_at
LIMIT %(batch_size)s
FOR UPDATE SKIP LOCKED
