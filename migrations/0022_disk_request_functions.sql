-- The disk request statements (gpudev/sql/disks/request_*.sql and rename.sql) share two
-- pieces, written once here: which disk a rename or delete may change, and the disk job a
-- request writes to the outbox in the same statement as its row (sent after commit).

-- A disk that may be renamed or deleted: not deleted, not held by a reservation (in_use)
-- and not named by a live one (0017 disk_live_holder).
CREATE FUNCTION disk_free_to_change(d disks) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT d.is_deleted AND NOT d.in_use
       AND disk_live_holder(d.user_id, d.disk_name) IS NULL
$$;

-- The job of the operation just recorded on `d` (its operation_id), written to the outbox
-- (0010 outbox_write, disk_operation_job): a statement selects it beside the changed row.
CREATE FUNCTION disk_job_write(operation text, d disks, previous_name text DEFAULT NULL)
RETURNS TABLE (outbox_id uuid, outbox_payload jsonb)
LANGUAGE sql VOLATILE AS $$
    SELECT job.outbox_id, job.payload
    FROM outbox_write(disk_operation_job(
        operation, d.operation_id, d.disk_id, d.user_id, d.disk_name, previous_name
    )) job
$$;

-- Invoker's rights: the API role's own grants (disks, outbox, disk_live_holder) apply inside.
REVOKE EXECUTE ON FUNCTION disk_free_to_change(disks) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION disk_job_write(text, disks, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION disk_free_to_change(disks) TO gpudev_api;
GRANT EXECUTE ON FUNCTION disk_job_write(text, disks, text) TO gpudev_api;
