-- What a checkpoint applied: the expiry from the current total hours, the warnings sent
-- since the last extension, Jupyter's address, and the change generation now in the pod.
-- An expiry warning sent now (a level the row did not hold) is also a timeline entry (kind
-- warning), once per level and expiry (reservation_events_once, migration 0036): a
-- checkpoint run again records it once. `before` is the row as this statement found it.
WITH before AS (
    SELECT warnings_sent FROM reservations WHERE reservation_id = %(reservation_id)s
), changed AS (
    UPDATE reservations SET
        expires_at = launched_at + make_interval(secs => duration_hours * %(seconds_per_hour)s),
        warnings_sent = %(warnings_sent)s,
        warning_text = %(warning_text)s,
        jupyter_url = %(jupyter_url)s,
        jupyter_port = %(jupyter_port)s,
        keyless_users = %(keyless_users)s,
        applied_generation = greatest(applied_generation, %(generation)s)
    WHERE reservation_id = %(reservation_id)s AND status = 'active'
    RETURNING *
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind,
                                    event_key)
    SELECT c.reservation_id, c.status, c.status, 'expiry warning sent: ' || c.warning_text,
           'warning',
           'warning:' || (SELECT min(m) FROM unnest(c.warnings_sent) AS m) || ':'
               || to_char(c.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
    FROM changed AS c, before AS b
    WHERE c.warning_text IS NOT NULL AND NOT (c.warnings_sent <@ b.warnings_sent)
    ON CONFLICT ON CONSTRAINT reservation_events_once DO NOTHING
)
SELECT * FROM changed
