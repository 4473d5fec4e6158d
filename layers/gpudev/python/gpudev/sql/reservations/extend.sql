-- duration_hours is the total since launch; the execution moves expires_at when it
-- applies this generation. reservations_total_hours_check caps the total at 48 h.
UPDATE reservations SET
    duration_hours = duration_hours + %(hours)s,
    extension_error = NULL,
    change_generation = change_generation + 1
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
RETURNING *
