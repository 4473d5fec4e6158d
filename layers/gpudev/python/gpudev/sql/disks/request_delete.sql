-- Soft delete: snapshots are kept for 30 days (reference §3, DELETE /v1/disks/{name}); the
-- disk job tags them `delete-date`, the daily purge deletes them on that date.
-- With the outbox row of its disk job, in the same statement (sent after commit); no row
-- when the disk is gone, already deleted or in use: held by a reservation (in_use) or
-- named by a live one (migrations/0022 disk_free_to_change).
WITH changed AS (
    UPDATE disks SET
        is_deleted = true,
        delete_date = current_date + 30,
        -- a new operation, requested
        (operation_id, operation_status, operation_error) = (gen_random_uuid(), 'requested', NULL)
    WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND disk_free_to_change(disks)
    RETURNING *
)
SELECT changed.*, job.*
FROM changed CROSS JOIN LATERAL disk_job_write('delete', changed) job
