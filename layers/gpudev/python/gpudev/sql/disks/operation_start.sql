-- The job's operation is the disk's current one and not done yet: it is now running. No
-- row when the disk is gone, a newer request superseded the job (stale) or it is done.
UPDATE disks SET operation_status = 'running', operation_error = NULL
WHERE disk_id = %(disk_id)s AND operation_id = %(operation_id)s
  AND operation_status IN ('requested', 'running', 'failed')
RETURNING *
