-- The execution parks on a new task token (waiting for capacity, or active between
-- checkpoints); whoever wants to wake it reads the token here.
UPDATE reservations SET task_token = %(task_token)s
WHERE reservation_id = %(reservation_id)s AND status IN ('queued', 'preparing', 'active')
RETURNING *
