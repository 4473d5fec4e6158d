-- The sweeper (gpudev/sweeper/) re-sends the create job of a reservation that stayed
-- pending without an execution, a few times, then ends it: how often and when last.
ALTER TABLE reservations
    ADD COLUMN create_job_resends integer NOT NULL DEFAULT 0
        CONSTRAINT reservations_create_job_resends_check CHECK (create_job_resends >= 0),
    ADD COLUMN create_job_resent_at timestamptz;

-- Its runs are recorded beside the other reconcilers'.
ALTER TABLE reconciler_runs DROP CONSTRAINT reconciler_runs_reconciler_check;
ALTER TABLE reconciler_runs ADD CONSTRAINT reconciler_runs_reconciler_check
    CHECK (reconciler IN ('gpu_availability', 'disk_reconciliation', 'sweeper'));

-- Every sweeper run reads the live reservations: only those, whatever the history's size.
CREATE INDEX reservations_live_idx ON reservations (status)
    WHERE status IN ('pending', 'queued', 'preparing', 'active');

-- The sweeper logs in as the lifecycle (it ends rows and releases through the allocator's
-- statements); it also counts re-sent create jobs and records its runs.
GRANT UPDATE (create_job_resends, create_job_resent_at) ON reservations TO gpudev_lifecycle;
GRANT SELECT, INSERT ON reconciler_runs TO gpudev_lifecycle;
GRANT UPDATE (finished_at, outcome, statistics, error) ON reconciler_runs TO gpudev_lifecycle;
