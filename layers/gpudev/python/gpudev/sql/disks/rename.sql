-- With the outbox row of its disk job, in the same statement (sent after commit); no row
-- when the disk is gone, deleted or in use. disks_user_disk_name_key refuses a taken name.
WITH changed AS (
    UPDATE disks SET
        disk_name = %(new_name)s,
        operation_id = gen_random_uuid(),
        operation_status = 'requested',
        operation_error = NULL
    WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND NOT is_deleted AND NOT in_use
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(disk_operation_job(
    'rename', changed.operation_id, changed.disk_id, changed.user_id, changed.disk_name,
    %(disk_name)s
)) job
