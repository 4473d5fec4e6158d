-- The caller's user row, in one round trip: created bound to the caller's principal on
-- first sight; last_seen_at refreshed (at most once a minute) only for that principal.
-- Another principal deriving the same username writes nothing and reads the row as it is,
-- so the caller can compare principal_arn and refuse. No row at all only when another
-- transaction inserted the username after this statement's snapshot (retry).
WITH bound AS (
    INSERT INTO users (username, principal_arn)
    VALUES (%(username)s, %(principal_arn)s)
    ON CONFLICT (username) DO UPDATE SET last_seen_at = now()
    WHERE users.principal_arn = EXCLUDED.principal_arn
      AND users.last_seen_at < now() - interval '1 minute'
    RETURNING *
)
SELECT * FROM bound
UNION ALL
SELECT * FROM users
WHERE username = %(username)s AND NOT EXISTS (SELECT FROM bound)
