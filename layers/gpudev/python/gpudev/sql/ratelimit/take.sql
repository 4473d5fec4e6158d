-- One request from the caller's bucket, in one round trip (ratelimit/service.py): the
-- bucket refills at %(per_second)s tokens a second up to %(burst)s; a request takes one
-- token. A new principal starts full. Returns retry_after_seconds: 0 when the token was
-- taken, else how long until one is there (nothing written). clock_timestamp(), not now():
-- under the row lock, after the request before it, so refills are never counted twice.
-- No row only when refused by a bucket another request created after this statement's
-- snapshot (a new principal's first burst): the caller runs it again.
WITH taken AS (
    INSERT INTO api_request_buckets AS b (principal_arn, tokens, refilled_at)
    VALUES (%(principal_arn)s, %(burst)s::double precision - 1, clock_timestamp())
    ON CONFLICT (principal_arn) DO UPDATE SET
        tokens = least(
            %(burst)s::double precision,
            b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.refilled_at))
                * %(per_second)s
        ) - 1,
        refilled_at = clock_timestamp()
    WHERE least(
        %(burst)s::double precision,
        b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.refilled_at))
            * %(per_second)s
    ) >= 1
    RETURNING 0::double precision AS retry_after_seconds
)
SELECT retry_after_seconds FROM taken
UNION ALL
SELECT (1 - (tokens + greatest(0, extract(epoch FROM clock_timestamp() - refilled_at))
        * %(per_second)s)) / %(per_second)s
FROM api_request_buckets
WHERE principal_arn = %(principal_arn)s AND NOT EXISTS (SELECT FROM taken)
