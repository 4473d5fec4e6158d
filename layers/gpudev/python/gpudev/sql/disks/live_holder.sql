-- The live reservation that names a disk (it holds the disk until it ends), if any.
SELECT reservation_id FROM reservations
WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
ORDER BY created_at
LIMIT 1
