-- The operation failed with a reason users see in `disk show` (the job is retried).
UPDATE disks SET operation_status = 'failed', operation_error = %(error)s
WHERE disk_id = %(disk_id)s AND operation_id = %(operation_id)s
RETURNING *
