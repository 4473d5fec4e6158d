-- Returns the row only when the user was added (not already there, reservation live).
UPDATE reservations SET
    secondary_users = secondary_users || %(github_user)s::text,
    change_generation = change_generation + 1
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
  AND NOT (%(github_user)s::text = ANY (secondary_users))
RETURNING *
