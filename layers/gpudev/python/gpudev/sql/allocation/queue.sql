-- Waiting for capacity: parked on a task token, not granted, not being cancelled; FIFO.
-- With the position and start the last pass recorded, so a pass sends only what changed.
SELECT reservation_id, gpu_type, gpu_count, total_nodes, duration_hours,
       extract(epoch FROM now() - created_at)::float8 AS waiting_seconds,
       queue_position, estimated_start_at
FROM reservations
WHERE status = 'queued' AND granted_at IS NULL AND task_token IS NOT NULL
  AND cancel_requested_at IS NULL
ORDER BY gpu_type, created_at, reservation_id
