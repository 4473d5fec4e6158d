-- A clone of the user's disk `source_name` named `disk_name`: the row exists at once (name
-- reserved), sized as the source, with the source recorded; its clone job copies the
-- source's latest completed snapshot as the new disk's (gpudev/disks/clone.py), written to
-- the outbox in the same statement (sent after commit). No row when the source is gone,
-- deleted or has no completed snapshot yet (the lifecycle records each one:
-- disk_holds/record_snapshot.sql). disks_user_disk_name_key refuses a taken name, the
-- disks_claim_name trigger a name still on the EBS tags of another disk (migrations/0017).
WITH created AS (
    INSERT INTO disks (user_id, disk_name, size_gb, cloned_from, operation_id, operation_status)
    SELECT source.user_id, %(disk_name)s, source.size_gb, source.disk_id, gen_random_uuid(),
           'requested'
    FROM disks source
    WHERE source.user_id = %(user_id)s AND source.disk_name = %(source_name)s
      AND NOT source.is_deleted AND source.last_snapshot_at IS NOT NULL
    RETURNING *
)
SELECT created.*, job.*
FROM created CROSS JOIN LATERAL disk_job_write('clone', created, %(source_name)s) job
