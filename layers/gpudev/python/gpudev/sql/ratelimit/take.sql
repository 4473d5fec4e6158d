-- One request from the caller's bucket, in one round trip (ratelimit/service.py): the
-- bucket refills at %(per_second)s tokens a second up to %(burst)s; a request takes one
-- token. A new principal starts full. Returns retry_after_seconds: 0 when the token was
-- taken, else how long until one is there.
--
-- Every request updates its row, taken or not, so every request waits for the row lock and
-- sees the row as the request before it left it: concurrent requests are counted one by one,
-- and the statement always returns its row (a refused request stores the refill it saw, which
-- changes nothing about the level). The level is computed with clock_timestamp(), not now():
-- under the row lock, after the request before it.
INSERT INTO api_request_buckets AS b (principal_arn, tokens, refilled_at, taken)
VALUES (%(principal_arn)s, %(burst)s::double precision - 1, clock_timestamp(), true)
ON CONFLICT (principal_arn) DO UPDATE SET
    (tokens, taken, refilled_at) = (
        SELECT level - CASE WHEN level >= 1 THEN 1 ELSE 0 END, level >= 1, clock_timestamp()
        FROM (
            SELECT least(
                %(burst)s::double precision,
                b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.refilled_at))
                    * %(per_second)s
            ) AS level
        ) AS refilled
    )
RETURNING CASE WHEN b.taken THEN 0 ELSE (1 - b.tokens) / %(per_second)s END
    AS retry_after_seconds
