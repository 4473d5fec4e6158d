-- One PostgreSQL role per function group, holding only the privileges that group's SQL uses
-- (docs/architecture.md "Security model / Database"). The migration function connects as
-- the cluster's master user, which creates, and so owns, every table; nobody else may
-- change the schema.
--
-- gpudev_api          the API function
-- gpudev_lifecycle    the jobs consumer, the reservation tasks and the allocator
-- gpudev_reconcilers  the GPU availability updater and the EBS disk reconciler
--
-- They are NOLOGIN group roles. Functions log in as <group>_login, a member of its group:
-- in Aurora with IAM database authentication (`rds_iam`, which exists only on RDS/Aurora,
-- so it is granted only where it exists), elsewhere not at all (no password is set).
-- Roles belong to the whole server, not to one database: create them only if missing.
--
-- tests/integration/test_database_roles.py runs every statement of each group's SQL files
-- as that group and proves what it is refused. A new table or statement needs its grant
-- here (in a new migration): there are no default privileges on purpose.
DO $$
DECLARE
    group_role text;
BEGIN
    FOREACH group_role IN ARRAY ARRAY['gpudev_api', 'gpudev_lifecycle', 'gpudev_reconcilers']
    LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = group_role) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', group_role);
        END IF;
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = group_role || '_login') THEN
            EXECUTE format('CREATE ROLE %I LOGIN', group_role || '_login');
        END IF;
        EXECUTE format('GRANT %I TO %I', group_role, group_role || '_login');
        IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rds_iam') THEN
            EXECUTE format('GRANT rds_iam TO %I', group_role || '_login');
        END IF;
    END LOOP;
END
$$;

-- Nobody but the owner creates objects (already PostgreSQL 15+'s default; said explicitly).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO gpudev_api, gpudev_lifecycle, gpudev_reconcilers;

-- The API: users bound on first call, reservations submitted and changed by their owner
-- (the lifecycle applies the changes), disks requested, the catalogue and capacity read.
GRANT SELECT, INSERT ON users TO gpudev_api;
GRANT UPDATE (last_seen_at, github_username) ON users TO gpudev_api;
GRANT SELECT ON gpu_types TO gpudev_api;
GRANT SELECT, INSERT ON reservations TO gpudev_api;
GRANT UPDATE (
    secondary_users, change_generation, duration_hours, extension_error,
    cancel_requested_at, jupyter_enabled
) ON reservations TO gpudev_api;
-- the status-history trigger runs as the caller: a new reservation writes its first event
GRANT SELECT, INSERT ON reservation_events TO gpudev_api;
GRANT SELECT, INSERT ON disks TO gpudev_api;
GRANT UPDATE (
    disk_name, operation_id, operation_status, operation_error, is_deleted, delete_date
) ON disks TO gpudev_api;

-- The lifecycle: a reservation's status and runtime fields, and the allocator's tables.
GRANT SELECT ON gpu_types TO gpudev_lifecycle;
GRANT SELECT ON reservations TO gpudev_lifecycle;
GRANT UPDATE (
    status, current_detailed_status, cancelled_at, failed_at, failure_reason,
    reservation_ended, execution_arn, task_token, pod_name, jupyter_token, ready_deadline,
    applied_generation, launched_at, expires_at, node_ip, node_port, ssh_command,
    warnings_sent, warning_text, jupyter_url, jupyter_port, queue_position,
    estimated_wait_minutes, granted_at, grant_signalled_at
) ON reservations TO gpudev_lifecycle;
GRANT SELECT, INSERT ON reservation_events TO gpudev_lifecycle;
GRANT SELECT, INSERT, UPDATE ON cluster_nodes TO gpudev_lifecycle;
GRANT SELECT, INSERT, DELETE ON node_slots, allocations TO gpudev_lifecycle;

-- The reconcilers: gpu_types' availability columns only, disks as EBS says, their runs; of
-- reservations only the id (a disk's reservation tag is kept only when it names one).
GRANT SELECT ON gpu_types TO gpudev_reconcilers;
GRANT UPDATE (
    total_cluster_gpus, available_gpus, max_reservable, full_nodes_available,
    running_instances, desired_capacity, max_per_node, last_availability_update,
    last_availability_updated_by
) ON gpu_types TO gpudev_reconcilers;
GRANT SELECT, INSERT ON disks TO gpudev_reconcilers;
GRANT UPDATE (
    ebs_volume_id, size_gb, in_use, reservation_id, snapshot_count, is_backing_up,
    last_snapshot_at
) ON disks TO gpudev_reconcilers;
GRANT SELECT (reservation_id) ON reservations TO gpudev_reconcilers;
GRANT SELECT, INSERT ON reconciler_runs TO gpudev_reconcilers;
GRANT UPDATE (finished_at, outcome, statistics, error) ON reconciler_runs TO gpudev_reconcilers;
