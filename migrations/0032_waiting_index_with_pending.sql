-- The waiting index holds the reservations not parked yet too (pending, and queued before
-- their park): the allocator's queue read keeps their place in the FIFO order, so a later
-- request never takes what an earlier one needs (gpudev/allocation/plan.py). Same keys and
-- order as 0026 (gpu_type, created_at, reservation_id): the read stays an ordered index scan.
-- A plain CREATE INDEX, as 0026: a SHARE lock while it builds over the waiting rows only.
DROP INDEX reservations_waiting_idx;
CREATE INDEX reservations_waiting_idx ON reservations (gpu_type, created_at, reservation_id)
    WHERE status IN ('pending', 'queued') AND granted_at IS NULL;
