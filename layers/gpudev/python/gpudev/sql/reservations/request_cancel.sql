-- Record the cancel request once; returns the row only the first time.
UPDATE reservations SET cancel_requested_at = now()
WHERE reservation_id = %(reservation_id)s
  AND cancel_requested_at IS NULL
  AND status IN ('pending', 'queued', 'preparing', 'active')
RETURNING *
