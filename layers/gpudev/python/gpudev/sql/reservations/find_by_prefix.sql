-- Full id or unique prefix; two rows are enough to know a prefix is ambiguous.
SELECT * FROM reservations
WHERE user_id = %(user_id)s
  AND reservation_id::text LIKE replace(replace(%(prefix)s, '%%', ''), '_', '') || '%%'
ORDER BY created_at
LIMIT 2
