-- An entry in the reservation's timeline that is not a status change (its status stays as
-- it is): the log tail of a pod that failed to start (kind pod_log).
INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
SELECT reservation_id, status, status, %(detail)s, %(kind)s
FROM reservations WHERE reservation_id = %(reservation_id)s
RETURNING *
