-- One way to write a job to the outbox (0009): every statement that records a request calls
-- outbox_write in the same statement as its change (`CROSS JOIN LATERAL outbox_write(...)`
-- over the changed rows), so the job commits or rolls back with it. The payload builders
-- below are the jobs' shapes in SQL (gpudev/jobs.py parses them), written once.
CREATE FUNCTION outbox_write(job jsonb)
RETURNS TABLE (outbox_id uuid, payload jsonb)
LANGUAGE sql VOLATILE
AS $$
    -- A NULL job writes nothing (a statement whose request changed nothing).
    INSERT INTO outbox AS o (payload) SELECT job WHERE job IS NOT NULL
    RETURNING o.outbox_id, o.payload
$$;

-- Extend, add-user and Jupyter: the wake-up that makes the execution apply the generation.
CREATE FUNCTION reservation_changed_job(reservation_id uuid, user_id text, change_generation integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_build_object(
        'kind', 'reservation_changed',
        'reservation_id', reservation_id,
        'user_id', user_id,
        'change_generation', change_generation
    )
$$;

-- Create, delete or rename of a disk recorded on its row (operation_id/status).
CREATE FUNCTION disk_operation_job(
    operation text, operation_id uuid, disk_id uuid, user_id text, disk_name text,
    previous_name text
)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_build_object(
        'kind', 'disk_operation',
        'operation', operation,
        'operation_id', operation_id,
        'disk_id', disk_id,
        'user_id', user_id,
        'disk_name', disk_name,
        'previous_name', previous_name
    )
$$;

-- Invoker's rights: the API role's own grants on outbox (0009) apply inside.
REVOKE EXECUTE ON FUNCTION outbox_write(jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION reservation_changed_job(uuid, text, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION disk_operation_job(text, uuid, uuid, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_write(jsonb) TO gpudev_api;
GRANT EXECUTE ON FUNCTION reservation_changed_job(uuid, text, integer) TO gpudev_api;
GRANT EXECUTE ON FUNCTION disk_operation_job(text, uuid, uuid, text, text, text) TO gpudev_api;
