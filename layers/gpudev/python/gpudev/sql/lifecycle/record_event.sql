-- Entries in the reservation's timeline that are not status changes (their status stays as
-- it is): the log tail of a failed start, the pod's scheduling, image pull, disk and
-- readiness, the disk's volume and snapshot. Each once: an entry whose key the timeline
-- holds already is not written (reservation_events_once, migration 0036), so a task run
-- again, or a readiness check that sees the same pod twice, adds nothing.
INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind, event_key)
SELECT r.reservation_id, r.status, r.status, e.detail, e.kind, e.event_key
FROM reservations AS r,
     unnest(%(kind)s::text[], %(detail)s::text[], %(event_key)s::text[])
         WITH ORDINALITY AS e(kind, detail, event_key, n)
WHERE r.reservation_id = %(reservation_id)s
ORDER BY e.n
ON CONFLICT ON CONSTRAINT reservation_events_once DO NOTHING
