-- Returns the row only when the setting changed (and the reservation is live).
UPDATE reservations SET
    jupyter_enabled = %(enabled)s,
    change_generation = change_generation + 1
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
  AND jupyter_enabled IS DISTINCT FROM %(enabled)s
RETURNING *
