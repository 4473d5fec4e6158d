-- The caller's user row (created on first call, bound to the caller's principal) and the
-- reservation, in one round trip. Returns no row, and inserts nothing, when the client
-- request id repeats or the username is bound to another principal (the submit checked
-- the binding just before; this guards the race with a first call of another principal).
WITH caller AS (
    INSERT INTO users (username, principal_arn)
    VALUES (%(username)s, %(principal_arn)s)
    ON CONFLICT (username) DO UPDATE SET last_seen_at = now()
    WHERE users.principal_arn = EXCLUDED.principal_arn
    RETURNING username
)
INSERT INTO reservations (
    reservation_id, user_id, client_request_id, name, gpu_type, gpu_count, total_nodes,
    instance_type, duration_hours, github_user, disk_name, jupyter_enabled,
    profiling
)
SELECT %(reservation_id)s, caller.username, %(client_request_id)s, %(name)s, %(gpu_type)s,
       %(gpu_count)s, %(total_nodes)s, %(instance_type)s, %(duration_hours)s, %(github_user)s,
       %(disk_name)s, %(jupyter_enabled)s, %(profiling)s
FROM caller
ON CONFLICT (user_id, client_request_id) DO NOTHING
RETURNING *
