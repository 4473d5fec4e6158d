-- The waiting reservations' index in the queue read's own order (allocation/queue.sql:
-- gpu_type, created_at, reservation_id), so the read is an ordered index scan instead of a
-- scan and a sort: at 100,000 queued the sort spilled 11 MB to disk (work_mem 4 MB) and took
-- 0.11-0.18 s of the read, the index scan 0.06-0.07 s in all (docs/decisions.md,
-- 2026-11-24 "The allocator's pass under 2 s..."). reservation_id is a third key, so every
-- query that used (gpu_type, created_at) still can. Only waiting rows are in it; its columns
-- are none that the queue's rewrite changes, which stays heap-only (0024).
-- A plain CREATE INDEX, as 0023 (the runner applies a file in a transaction, where
-- CONCURRENTLY cannot run): a SHARE lock while it builds over the waiting rows only.
DROP INDEX reservations_waiting_idx;
CREATE INDEX reservations_waiting_idx ON reservations (gpu_type, created_at, reservation_id)
    WHERE status = 'queued' AND granted_at IS NULL;
