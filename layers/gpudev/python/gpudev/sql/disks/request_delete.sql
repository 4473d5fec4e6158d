-- Soft delete: snapshots are kept for 30 days (reference §3, DELETE /v1/disks/{name}); the
-- disk job tags them `delete-date`, the daily purge deletes them on that date.
-- With the outbox row of its disk job, in the same statement (sent after commit); no row
-- when the disk is gone, already deleted or in use: held by a reservation (in_use) or
-- named by a live one.
WITH changed AS (
    UPDATE disks SET
        is_deleted = true,
        delete_date = current_date + 30,
        operation_id = gen_random_uuid(),
        operation_status = 'requested',
        operation_error = NULL
    WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND NOT is_deleted AND NOT in_use
      AND disk_live_holder(%(user_id)s, %(disk_name)s) IS NULL
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(disk_operation_job(
    'delete', changed.operation_id, changed.disk_id, changed.user_id, changed.disk_name, NULL
)) job
