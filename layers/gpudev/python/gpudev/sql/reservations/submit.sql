-- The caller's user row (created on first call) and the reservation, in one round trip.
-- A repeated client request id inserts nothing and returns no row.
WITH caller AS (
    INSERT INTO users (username, principal_arn)
    VALUES (%(username)s, %(principal_arn)s)
    ON CONFLICT (principal_arn) DO UPDATE SET last_seen_at = now()
    RETURNING username
)
INSERT INTO reservations (
    reservation_id, user_id, client_request_id, name, gpu_type, gpu_count, total_nodes,
    instance_type, duration_hours, github_user, disk_name, jupyter_enabled
)
SELECT %(reservation_id)s, caller.username, %(client_request_id)s, %(name)s, %(gpu_type)s,
       %(gpu_count)s, %(total_nodes)s, %(instance_type)s, %(duration_hours)s, %(github_user)s,
       %(disk_name)s, %(jupyter_enabled)s
FROM caller
ON CONFLICT (user_id, client_request_id) DO NOTHING
RETURNING *
