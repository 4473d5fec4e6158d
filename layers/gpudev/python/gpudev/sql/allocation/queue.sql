-- Waiting for capacity: not granted, not being cancelled; FIFO per GPU type, parked on a task
-- token or not yet (pending, or queued before its park): one not parked yet keeps its place
-- and is never granted (gpudev/allocation/plan.py), so a later request never takes what an
-- earlier one needs.
-- With the position and start the last pass recorded, so a pass sends only what changed;
-- the start in epoch seconds (date_part: a float8, one per microsecond, cheaper to read than
-- a timestamptz). The id as text (repositories/allocations.py QueueColumns); FIFO on the
-- uuid itself.
-- A reservation whose image is still being built (image_build set, image not yet) is not in
-- the queue: it would hold its place, and the queue behind it, for the whole build.
SELECT r.reservation_id::text AS reservation_id, gpu_type, gpu_count, total_nodes, duration_hours,
       profiling, status = 'queued' AND task_token IS NOT NULL AS parked,
       queue_position, date_part('epoch', estimated_start_at) AS estimated_start
FROM reservations r
WHERE status IN ('pending', 'queued') AND granted_at IS NULL AND cancel_requested_at IS NULL
  AND (image_build IS NULL OR image IS NOT NULL)
ORDER BY r.gpu_type, r.created_at, r.reservation_id
