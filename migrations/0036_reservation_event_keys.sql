-- The reservation's timeline, complete (issue #32; docs/decisions.md, 2026-11-27 "The
-- timeline complete, each entry once").
--
-- New kinds: grant (the allocator's grant, with its nodes: allocation/grant.sql);
-- scheduling (the pod bound to a node, or the scheduler's reason it is not); image
-- (pulling, pulled, pull error); disk (the volume placed, available, attached, or failing;
-- the snapshot started, completed, failed: lifecycle/disk.py); readiness (the pod Ready);
-- oom and restart (a container OOM-killed, the pods restarted: pod_health/record.sql);
-- warning (an expiry warning sent: lifecycle/checkpoint.sql).
--
-- event_key: what makes an entry once. Tasks run at least once (a retried Lambda, a
-- redelivered message, a readiness check that sees the same pod twice), so an entry with
-- a key is written with ON CONFLICT DO NOTHING and this constraint holds it to one per
-- reservation; entries without one (a status change, an extension, a start-up step) are
-- kept once by the conditional write that makes them.
ALTER TABLE reservation_events
    ADD COLUMN event_key text,
    ADD CONSTRAINT reservation_events_once UNIQUE (reservation_id, event_key),
    DROP CONSTRAINT reservation_events_kind_check,
    ADD CONSTRAINT reservation_events_kind_check CHECK (kind IN (
        'status', 'extension', 'startup', 'pod_log', 'health',
        'grant', 'scheduling', 'image', 'disk', 'readiness', 'oom', 'restart', 'warning'
    ));
-- ON CONFLICT reads the arbiter's columns: the availability updater (OOM kills, restarts)
-- may read those two, and nothing else of the timeline.
GRANT SELECT (reservation_id, event_key) ON reservation_events TO gpudev_reconcilers;
