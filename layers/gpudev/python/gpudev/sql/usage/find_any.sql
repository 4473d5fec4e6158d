-- A reservation of anyone's, by full id or unique prefix (operators): two rows are enough
-- to know a prefix is ambiguous.
SELECT * FROM reservations
WHERE reservation_id::text LIKE replace(replace(%(prefix)s, '%%', ''), '_', '') || '%%'
ORDER BY created_at
LIMIT 2
