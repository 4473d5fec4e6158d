-- The caller's reservations whose id is or starts with the prefix (two are enough to know
-- a prefix is ambiguous), with the principal the username is bound to, in one round trip:
-- no row when the username is unknown; one row with NULL reservation columns when nothing
-- matches; reservations only when the username is bound to the caller's principal.
SELECT u.principal_arn AS bound_principal, r.*
FROM users u
LEFT JOIN LATERAL (
    SELECT * FROM reservations
    WHERE reservations.user_id = u.username
      AND u.principal_arn = %(principal_arn)s
      AND reservation_id::text LIKE replace(replace(%(prefix)s, '%%', ''), '_', '') || '%%'
    ORDER BY created_at
    LIMIT 2
) r ON true
WHERE u.username = %(user_id)s
