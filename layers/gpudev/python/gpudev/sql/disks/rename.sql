-- With the outbox row of its disk job, in the same statement (sent after commit); no row
-- when the disk is gone, deleted or in use: held by a reservation (in_use) or named by a
-- live one (migrations/0022 disk_free_to_change). disks_user_disk_name_key refuses a taken
-- name, the disks_claim_name trigger a name still on the EBS tags of another disk renamed
-- from it (migrations/0017).
-- `tagged_name` keeps the name the EBS tags still carry (the oldest one, if an earlier
-- rename has not reached them).
WITH changed AS (
    UPDATE disks SET
        disk_name = %(new_name)s,
        tagged_name = coalesce(tagged_name, disk_name),
        -- a new operation, requested
        (operation_id, operation_status, operation_error) = (gen_random_uuid(), 'requested', NULL)
    WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND disk_free_to_change(disks)
    RETURNING *
)
SELECT changed.*, job.*
FROM changed CROSS JOIN LATERAL disk_job_write('rename', changed, %(disk_name)s) job
