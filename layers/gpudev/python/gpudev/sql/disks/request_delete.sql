-- Soft delete: snapshots are kept for 30 days (reference §3, DELETE /v1/disks/{name}).
UPDATE disks SET
    is_deleted = true,
    delete_date = current_date + 30,
    operation_id = gen_random_uuid(),
    operation_status = 'requested',
    operation_error = NULL
WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND NOT is_deleted AND NOT in_use
RETURNING *
