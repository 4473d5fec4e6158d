INSERT INTO users (username, principal_arn)
VALUES (%(username)s, %(principal_arn)s)
ON CONFLICT (principal_arn) DO UPDATE SET last_seen_at = now()
RETURNING *
