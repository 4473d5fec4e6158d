-- The reservation's timeline, served (issue #32; docs/decisions.md, 2026-11-27 "The
-- reservation's timeline served, the start-up step on the row, the log tail of a failed
-- start").
--
-- kind: what an entry records. status: a status change (the trigger's, as before);
-- extension: hours added (reservations/change.sql); startup: the step a starting pod is in
-- or why it waits (lifecycle/progress.sql, written only when it changes); pod_log: the last
-- lines a pod that failed to start printed (lifecycle/record_event.sql); health: an active
-- pod's health warning (OOM kills, restarts, a pod or node in trouble) set, changed or
-- cleared (pod_health/record.sql, by the availability updater: gpudev_reconcilers).
ALTER TABLE reservation_events
    ADD COLUMN kind text NOT NULL DEFAULT 'status'
        CONSTRAINT reservation_events_kind_check
        CHECK (kind IN ('status', 'extension', 'startup', 'pod_log', 'health'));
UPDATE reservation_events SET kind = 'extension'
WHERE from_status = to_status AND detail LIKE 'extended by %';
GRANT INSERT ON reservation_events TO gpudev_reconcilers;
