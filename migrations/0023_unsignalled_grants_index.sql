-- Grants not signalled yet, read by every allocator pass (allocation/unsignalled.sql): a few
-- rows at any moment, found without a scan of every reservation the table ever held.
-- A plain CREATE INDEX: the runner applies each file in a transaction, where CONCURRENTLY
-- cannot run. It takes a SHARE lock: reads go on, writes to reservations wait while it
-- builds, 0.05–0.14 s at 104,500 rows; the runner's lock_timeout bounds its wait for the
-- lock (docs/decisions.md, 2026-11-24 "The allocator at scale: one expected end…").
-- Its columns are none that the queue's rewrite changes, so that stays heap-only (0019).
CREATE INDEX reservations_unsignalled_idx ON reservations (reservation_id)
    WHERE status = 'queued' AND granted_at IS NOT NULL AND grant_signalled_at IS NULL
      AND task_token IS NOT NULL;
