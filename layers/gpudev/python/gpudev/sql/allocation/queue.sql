-- Waiting for capacity: parked on a task token, not granted, not being cancelled; FIFO.
-- With the position and start the last pass recorded, so a pass sends only what changed;
-- the start in epoch seconds (date_part: a float8, one per microsecond, cheaper to read than
-- a timestamptz). The id as text (repositories/allocations.py QueueColumns); FIFO on the
-- uuid itself.
SELECT r.reservation_id::text AS reservation_id, gpu_type, gpu_count, total_nodes, duration_hours,
       profiling, queue_position, date_part('epoch', estimated_start_at) AS estimated_start
FROM reservations r
WHERE status = 'queued' AND granted_at IS NULL AND task_token IS NOT NULL
  AND cancel_requested_at IS NULL
ORDER BY r.gpu_type, r.created_at, r.reservation_id
