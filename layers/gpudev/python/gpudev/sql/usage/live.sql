-- Every live reservation, for operators: oldest first.
SELECT * FROM reservations
WHERE status IN ('pending', 'queued', 'preparing', 'active')
ORDER BY created_at, reservation_id
