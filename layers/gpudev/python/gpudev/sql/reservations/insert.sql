INSERT INTO reservations (
    reservation_id, user_id, client_request_id, name, gpu_type, gpu_count, total_nodes,
    instance_type, duration_hours, github_user, disk_name, jupyter_enabled,
    profiling
)
VALUES (
    %(reservation_id)s, %(user_id)s, %(client_request_id)s, %(name)s, %(gpu_type)s,
    %(gpu_count)s, %(total_nodes)s, %(instance_type)s, %(duration_hours)s, %(github_user)s,
    %(disk_name)s, %(jupyter_enabled)s, %(profiling)s
)
RETURNING *
