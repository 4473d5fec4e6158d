-- Pod health, watched (issue #15 item 5): the availability updater reads every live pod once
-- a run; for each active reservation it records OOM kills (`oom_count`, `last_oom_at`,
-- 0001), the containers' restart count it has seen (so an OOM kill is counted once), the
-- warning the user sees in `show`/`list`, and, for a pod or node that is gone or an evicted
-- pod, the reason the reservation must end with. It wakes the reservation's execution, whose
-- checkpoint reads `health_ending` and ends it through Tear down (the one way to end).
ALTER TABLE reservations ADD COLUMN pod_restarts integer NOT NULL DEFAULT 0
    CONSTRAINT reservations_pod_restarts_check CHECK (pod_restarts >= 0);
ALTER TABLE reservations ADD COLUMN health_warning text;
ALTER TABLE reservations ADD COLUMN health_ending text;

-- The availability updater logs in as the reconcilers.
GRANT SELECT (
    status, total_nodes, launched_at, task_token, pod_restarts, oom_count, last_oom_at,
    health_warning, health_ending
) ON reservations TO gpudev_reconcilers;
GRANT UPDATE (
    oom_count, last_oom_at, pod_restarts, health_warning, health_ending
) ON reservations TO gpudev_reconcilers;
