-- After the relay's puts, in the batch's transaction: what the bus took is marked published,
-- what it refused is counted and waits for the next run.
WITH published AS (
    UPDATE bus_events SET published_at = now(), last_attempt_at = now()
    WHERE event_key = ANY(%(published)s::text[])
    RETURNING event_key
),
refused AS (
    UPDATE bus_events SET relay_attempts = relay_attempts + 1, last_attempt_at = now()
    WHERE event_key = ANY(%(refused)s::text[])
    RETURNING event_key
)
SELECT (SELECT count(*) FROM published)::integer AS published,
       (SELECT count(*) FROM refused)::integer AS refused
