UPDATE reservations SET
    status = 'preparing',
    task_token = NULL,
    pod_name = %(pod_name)s,
    namespace = %(namespace)s,
    jupyter_token = coalesce(jupyter_token, %(jupyter_token)s),
    ssh_host_keys = %(ssh_host_keys)s,
    keyless_users = %(keyless_users)s,
    ready_deadline = now() + make_interval(secs => %(ready_timeout_seconds)s),
    applied_generation = %(generation)s,
    current_detailed_status = 'starting the pod'
WHERE reservation_id = %(reservation_id)s AND status IN ('queued', 'preparing')
RETURNING *
