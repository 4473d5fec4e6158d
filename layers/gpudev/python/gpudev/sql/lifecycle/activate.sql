-- Preparing to active: launched now, its SSH address, and what node 0's Jupyter check said.
UPDATE reservations SET
    status = 'active',
    launched_at = now(),
    expires_at = now() + make_interval(secs => duration_hours * %(seconds_per_hour)s),
    node_ip = %(node_ip)s,
    node_port = %(node_port)s,
    ssh_command = %(ssh_command)s,
    node_address_kind = %(node_address_kind)s,
    ssh_nodes = %(ssh_nodes)s,
    jupyter_available = %(jupyter_available)s,
    jupyter_error = %(jupyter_error)s,
    warnings_sent = '{}',
    current_detailed_status = 'ready'
WHERE reservation_id = %(reservation_id)s AND status = 'preparing'
RETURNING *
