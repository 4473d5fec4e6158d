-- A transient fault outlasted an attempt of a task: the status line says what the
-- reservation waits for, in front of what it said (kept, so the line comes back once the
-- fault is over; lifecycle/outage_over.sql). Written once per reason, never on an ended row.
UPDATE reservations SET current_detailed_status = %(line)s || '; '
    || regexp_replace(coalesce(current_detailed_status, status::text), %(prefix)s, '')
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
  AND coalesce(current_detailed_status, '') NOT LIKE %(line)s || '; %%'
RETURNING *
