-- Seconds since the reservation's execution last applied a change or was woken for one
-- (change_wakes, migration 0028); no row: never.
SELECT extract(epoch FROM now() - woken_at)::double precision AS seconds
FROM change_wakes
WHERE reservation_id = %(reservation_id)s
