-- gpu-dev control plane: users, GPU catalogue + availability, reservations and their
-- history, persistent disks, reconciler runs. Runs on PostgreSQL 16+ (Aurora 16/17).
-- Constraint names are part of the contract: gpudev/errors.py maps them to domain errors.

CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;

-- One row per IAM principal, created on its first authenticated call.
CREATE TABLE users (
    username        text NOT NULL,
    principal_arn   text NOT NULL,
    github_username text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_seen_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_username_key PRIMARY KEY (username),
    CONSTRAINT users_principal_arn_key UNIQUE (principal_arn),
    CONSTRAINT users_username_check CHECK (username ~ '^[A-Za-z0-9._@+=,-]{1,64}$'),
    -- GitHub: alphanumerics and single inner hyphens, at most 39 characters.
    CONSTRAINT users_github_username_check CHECK (
        github_username ~ '^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$'
    )
);

-- Static configuration of each GPU type plus the availability columns the updater keeps
-- current (seed 000, "Database Schema").
CREATE TABLE gpu_types (
    gpu_type                     text PRIMARY KEY,
    instance_type                text NOT NULL,
    max_gpus                     integer NOT NULL CHECK (max_gpus >= 0),
    cpus                         integer NOT NULL CHECK (cpus > 0),
    memory_gb                    integer NOT NULL CHECK (memory_gb > 0),
    is_active                    boolean NOT NULL DEFAULT true,
    description                  text,
    total_cluster_gpus           integer NOT NULL DEFAULT 0 CHECK (total_cluster_gpus >= 0),
    available_gpus               integer NOT NULL DEFAULT 0 CHECK (available_gpus >= 0),
    max_reservable               integer NOT NULL DEFAULT 0 CHECK (max_reservable >= 0),
    full_nodes_available         integer NOT NULL DEFAULT 0 CHECK (full_nodes_available >= 0),
    running_instances            integer NOT NULL DEFAULT 0 CHECK (running_instances >= 0),
    desired_capacity             integer NOT NULL DEFAULT 0 CHECK (desired_capacity >= 0),
    max_per_node                 integer NOT NULL CHECK (max_per_node >= 0),
    last_availability_update     timestamptz,
    last_availability_updated_by text,
    created_at                   timestamptz NOT NULL DEFAULT now(),
    updated_at                   timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER gpu_types_updated_at BEFORE UPDATE ON gpu_types
    FOR EACH ROW EXECUTE FUNCTION set_updated_at();

CREATE TABLE reservations (
    reservation_id          uuid PRIMARY KEY,
    user_id                 text NOT NULL,
    client_request_id       text,
    name                    text,
    status                  text NOT NULL DEFAULT 'pending',
    gpu_type                text NOT NULL,
    gpu_count               integer NOT NULL,
    total_nodes             integer NOT NULL DEFAULT 1 CHECK (total_nodes BETWEEN 1 AND 4),
    instance_type           text,
    duration_hours          double precision NOT NULL,
    github_user             text,
    disk_name               text,
    jupyter_enabled         boolean NOT NULL DEFAULT false,
    jupyter_url             text,
    jupyter_port            integer,
    jupyter_token           text,
    jupyter_error           text,
    namespace               text NOT NULL DEFAULT 'gpu-dev',
    pod_name                text,
    node_ip                 text,
    node_port               integer,
    ssh_command             text,
    ebs_volume_id           text,
    secondary_users         text[] NOT NULL DEFAULT '{}',
    -- Warning levels (minutes before expiry) already delivered since the last extend.
    warnings_sent           integer[] NOT NULL DEFAULT '{}',
    extension_error         text,
    failure_reason          text,
    current_detailed_status text,
    queue_position          integer,
    estimated_wait_minutes  integer,
    oom_count               integer NOT NULL DEFAULT 0,
    last_oom_at             timestamptz,
    -- Step Functions: the execution that runs this reservation and the callback token it
    -- is parked on (waiting for capacity, or active between checkpoints).
    execution_arn           text,
    task_token              text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    launched_at             timestamptz,
    expires_at              timestamptz,
    cancelled_at            timestamptz,
    failed_at               timestamptz,
    reservation_ended       timestamptz,
    CONSTRAINT reservations_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (username),
    CONSTRAINT reservations_gpu_type_fkey FOREIGN KEY (gpu_type) REFERENCES gpu_types (gpu_type),
    CONSTRAINT reservations_client_request_key UNIQUE (user_id, client_request_id),
    CONSTRAINT reservations_status_check CHECK (
        status IN ('pending', 'queued', 'preparing', 'active', 'cancelled', 'expired', 'failed')
    ),
    CONSTRAINT reservations_gpu_count_check CHECK (gpu_count >= 0),
    CONSTRAINT reservations_duration_hours_check CHECK (duration_hours > 0),
    CONSTRAINT reservations_expiry_after_launch_check CHECK (
        expires_at IS NULL OR (launched_at IS NOT NULL AND expires_at > launched_at)
    ),
    CONSTRAINT reservations_ended_when_final_check CHECK (
        (status IN ('cancelled', 'expired', 'failed')) = (reservation_ended IS NOT NULL)
    )
);
CREATE INDEX reservations_user_status_idx ON reservations (user_id, status);
CREATE INDEX reservations_live_by_type_idx ON reservations (gpu_type, created_at)
    WHERE status IN ('pending', 'queued', 'preparing', 'active');
CREATE INDEX reservations_expires_at_idx ON reservations (expires_at) WHERE status = 'active';
CREATE INDEX reservations_created_at_idx ON reservations (created_at DESC);
CREATE TRIGGER reservations_updated_at BEFORE UPDATE ON reservations
    FOR EACH ROW EXECUTE FUNCTION set_updated_at();

-- Status history, one row per change, written by a trigger so no code path can forget it.
CREATE TABLE reservation_events (
    event_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reservation_id uuid NOT NULL REFERENCES reservations (reservation_id) ON DELETE CASCADE,
    at             timestamptz NOT NULL DEFAULT now(),
    from_status    text,
    to_status      text NOT NULL,
    detail         text
);
CREATE INDEX reservation_events_reservation_idx ON reservation_events (reservation_id, event_id);

CREATE FUNCTION record_reservation_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO reservation_events (reservation_id, from_status, to_status, detail)
        VALUES (
            NEW.reservation_id,
            CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END,
            NEW.status,
            NEW.current_detailed_status
        );
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER reservations_status_history AFTER INSERT OR UPDATE OF status ON reservations
    FOR EACH ROW EXECUTE FUNCTION record_reservation_status();

-- Named persistent disks, kept true to EBS by the disk reconciler (seed 000). user_id is
-- the `gpu-dev-user` tag value (a username); no foreign key, because AWS is the source of
-- truth and may hold volumes of users who never called the API.
CREATE TABLE disks (
    disk_id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id                    text NOT NULL,
    disk_name                  text NOT NULL,
    ebs_volume_id              text,
    size_gb                    integer CHECK (size_gb > 0),
    disk_size                  text,
    in_use                     boolean NOT NULL DEFAULT false,
    reservation_id             uuid REFERENCES reservations (reservation_id) ON DELETE SET NULL,
    is_deleted                 boolean NOT NULL DEFAULT false,
    delete_date                date,
    marked_deleted_at          timestamptz,
    snapshot_count             integer NOT NULL DEFAULT 0 CHECK (snapshot_count >= 0),
    pending_snapshot_count     integer NOT NULL DEFAULT 0 CHECK (pending_snapshot_count >= 0),
    is_backing_up              boolean NOT NULL DEFAULT false,
    last_snapshot_at           timestamptz,
    operation_id               uuid,
    operation_status           text,
    operation_error            text,
    last_used                  timestamptz,
    latest_snapshot_content_s3 text,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    last_updated               timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT disks_user_disk_name_key UNIQUE (user_id, disk_name),
    CONSTRAINT disks_disk_name_check CHECK (disk_name ~ '^[A-Za-z0-9_-]{1,50}$'),
    CONSTRAINT disks_deleted_has_date_check CHECK (NOT is_deleted OR delete_date IS NOT NULL)
);
CREATE UNIQUE INDEX disks_ebs_volume_id_key ON disks (ebs_volume_id) WHERE ebs_volume_id IS NOT NULL;
CREATE INDEX disks_reservation_idx ON disks (reservation_id) WHERE reservation_id IS NOT NULL;

CREATE FUNCTION set_disk_last_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.last_updated := now();
    IF NEW.is_deleted AND NOT OLD.is_deleted THEN
        NEW.marked_deleted_at := now();
    ELSIF OLD.is_deleted AND NOT NEW.is_deleted THEN
        NEW.marked_deleted_at := NULL;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER disks_last_updated BEFORE UPDATE ON disks
    FOR EACH ROW EXECUTE FUNCTION set_disk_last_updated();

-- One row per run of a scheduled reconciler, with the statistics it reported.
CREATE TABLE reconciler_runs (
    run_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reconciler  text NOT NULL CHECK (reconciler IN ('gpu_availability', 'disk_reconciliation')),
    invoked_by  text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome     text CHECK (outcome IN ('succeeded', 'failed', 'skipped')),
    statistics  jsonb NOT NULL DEFAULT '{}',
    error       text,
    CONSTRAINT reconciler_runs_finished_check CHECK ((outcome IS NULL) = (finished_at IS NULL))
);
CREATE INDEX reconciler_runs_latest_idx ON reconciler_runs (reconciler, started_at DESC);
