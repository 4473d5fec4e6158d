SELECT user_id, file_system_id, client_token, access_point_id, created_at, ready_at
FROM shared_file_access_points
WHERE user_id = %(user_id)s AND file_system_id = %(file_system_id)s
FOR UPDATE;
