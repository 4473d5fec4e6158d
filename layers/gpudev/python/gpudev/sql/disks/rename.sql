-- With the outbox row of its disk job, in the same statement (sent after commit); no row
-- when the disk is gone, deleted or in use: held by a reservation (in_use) or named by a
-- live one. disks_user_disk_name_key refuses a taken name, the disks_claim_name trigger a
-- name still on the EBS tags of another disk renamed from it (migrations/0017).
-- `tagged_name` keeps the name the EBS tags still carry (the oldest one, if an earlier
-- rename has not reached them).
WITH changed AS (
    UPDATE disks SET
        disk_name = %(new_name)s,
        tagged_name = coalesce(tagged_name, disk_name),
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
    'rename', changed.operation_id, changed.disk_id, changed.user_id, changed.disk_name,
    %(disk_name)s
)) job
