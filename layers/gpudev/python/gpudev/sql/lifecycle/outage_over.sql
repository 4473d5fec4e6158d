-- A task ran through: a "waiting for ..." in front of the status line (lifecycle/waiting.sql)
-- is over, and the line is what it said before. Matches nothing unless a fault was recorded.
UPDATE reservations
SET current_detailed_status = regexp_replace(current_detailed_status, %(prefix)s, '')
WHERE reservation_id = %(reservation_id)s AND current_detailed_status ~ %(prefix)s
RETURNING *
