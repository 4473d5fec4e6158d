-- The event relay's batch: events not yet on the bus, oldest first, locked for this
-- transaction. SKIP LOCKED: rows another relay holds are its to put, never put twice at once.
SELECT event_key, detail_type, detail, relay_attempts
FROM bus_events
WHERE published_at IS NULL
ORDER BY created_at
LIMIT %(batch_size)s
FOR UPDATE SKIP LOCKED
