-- A reservation waiting for its build: the status line says how far the build is.
UPDATE reservations SET current_detailed_status = %(detail)s
WHERE reservation_id = %(reservation_id)s AND status = 'queued' AND image IS NULL
  AND current_detailed_status IS DISTINCT FROM %(detail)s
RETURNING reservation_id
