-- A disk the user asked for: the row exists at once (name reserved), the volume is made
-- by the disk job, written to the outbox in the same statement (sent after commit).
-- disks_user_disk_name_key refuses a second disk of the same name, the disks_claim_name
-- trigger a name still on the EBS tags of another disk renamed from it (its `tagged_name`:
-- the new disk would find that disk's snapshots as its own; migrations/0017).
WITH created AS (
    INSERT INTO disks (user_id, disk_name, size_gb, operation_id, operation_status)
    VALUES (%(user_id)s, %(disk_name)s, %(size_gb)s, gen_random_uuid(), 'requested')
    RETURNING *
)
SELECT created.*, job.*
FROM created CROSS JOIN LATERAL disk_job_write('create', created) job
