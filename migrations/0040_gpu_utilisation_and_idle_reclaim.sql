-- GPUs used, not just held (issue #36; docs/utilisation.md, docs/decisions.md 2026-11-27
-- "GPU utilisation from the DCGM exporter, scraped by the availability updater").
--
-- The availability updater scrapes each GPU node's DCGM exporter once a run and writes:
-- gpu_samples, the recent samples of each reservation's GPUs (bounded: the same run deletes
-- those older than two clock hours), and gpu_usage_hourly, their rollup per reservation
-- and hour (GPU-seconds seen, GPU-seconds busy, utilisation-seconds, peak memory), kept
-- as long as the reservation.
CREATE TABLE gpu_samples (
    reservation_id uuid NOT NULL REFERENCES reservations ON DELETE CASCADE,
    gpu text NOT NULL,  -- "<node>/<index>": the GPU as its node's exporter names it
    sampled_at timestamptz NOT NULL,
    util_percent real NOT NULL CONSTRAINT gpu_samples_util_check
        CHECK (util_percent >= 0 AND util_percent <= 100),
    memory_used_mib real NOT NULL CONSTRAINT gpu_samples_memory_check
        CHECK (memory_used_mib >= 0),
    PRIMARY KEY (reservation_id, gpu, sampled_at)
);
CREATE INDEX gpu_samples_sampled_at ON gpu_samples (sampled_at);

CREATE TABLE gpu_usage_hourly (
    reservation_id uuid NOT NULL REFERENCES reservations ON DELETE CASCADE,
    hour timestamptz NOT NULL,
    gpu_seconds double precision NOT NULL DEFAULT 0,  -- GPU-seconds sampled
    busy_gpu_seconds double precision NOT NULL DEFAULT 0,  -- of them at/above the threshold
    util_percent_seconds double precision NOT NULL DEFAULT 0,  -- sum of util x seconds
    peak_memory_mib real NOT NULL DEFAULT 0,
    PRIMARY KEY (reservation_id, hour)
);

-- Idle reclaim. idle_timeout_minutes: clock minutes without GPU use before the warning
-- (NULL: never reclaimed, `--idle-timeout none`); idle_active_at: the last time the
-- updater saw use (or could not look, or the timeout was set): idle is measured from it,
-- or from launch. idle_warning/idle_warned_at: the warning sent (the pod's banner and the
-- timeline); idle_ending: the reason the execution ends the reservation with, once
-- recorded kept (as health_ending).
ALTER TABLE reservations ADD COLUMN idle_timeout_minutes integer
    CONSTRAINT reservations_idle_timeout_check CHECK (idle_timeout_minutes > 0);
ALTER TABLE reservations ADD COLUMN idle_active_at timestamptz;
ALTER TABLE reservations ADD COLUMN idle_warning text;
ALTER TABLE reservations ADD COLUMN idle_warned_at timestamptz;
ALTER TABLE reservations ADD COLUMN idle_ending text;

-- The availability updater logs in as the reconcilers.
GRANT SELECT, INSERT, DELETE ON gpu_samples TO gpudev_reconcilers;
GRANT SELECT, INSERT, UPDATE ON gpu_usage_hourly TO gpudev_reconcilers;
GRANT SELECT (
    gpu_type, gpu_count, idle_timeout_minutes, idle_active_at, idle_warning, idle_warned_at,
    idle_ending
) ON reservations TO gpudev_reconcilers;
GRANT UPDATE (idle_active_at, idle_warning, idle_warned_at, idle_ending)
    ON reservations TO gpudev_reconcilers;
-- The API sets the timeout (reserve, edit) and shows the figures.
GRANT UPDATE (idle_timeout_minutes, idle_active_at, idle_warning, idle_warned_at)
    ON reservations TO gpudev_api;
GRANT SELECT ON gpu_samples, gpu_usage_hourly TO gpudev_api;
