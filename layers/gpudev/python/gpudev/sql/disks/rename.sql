UPDATE disks SET
    disk_name = %(new_name)s,
    operation_id = gen_random_uuid(),
    operation_status = 'requested',
    operation_error = NULL
WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND NOT is_deleted AND NOT in_use
RETURNING *
