-- Undelete: a disk marked for deletion comes back before its date (after it, the purge may
-- already be deleting its snapshots). The disk job removes the snapshots' `delete-date`
-- tags. With the outbox row of its job, in the same statement (sent after commit); no row
-- when the disk is gone, not deleted, or past its date.
WITH changed AS (
    UPDATE disks SET
        is_deleted = false,
        delete_date = NULL,
        -- a new operation, requested
        (operation_id, operation_status, operation_error) = (gen_random_uuid(), 'requested', NULL)
    WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND is_deleted
      AND delete_date > current_date
    RETURNING *
)
SELECT changed.*, job.*
FROM changed CROSS JOIN LATERAL disk_job_write('restore', changed) job
