-- Waiting reservations' queue positions and estimated starts (NULL: it never fits), written
-- only where either changed: a start is a moment, so it holds still while time passes.
-- Joined with the waiting rows only (the queue's own conditions), not the table's history:
-- the join reads the queue through an index instead of every reservation ever made.
-- A pending row (its execution not started yet) gets its place too, and keeps its own
-- detailed status (the sweeper's "create job sent again").
-- updated_at set here, to what the trigger would set: its WHEN then skips the call (0025).
UPDATE reservations r SET
    queue_position = w.position,
    estimated_start_at = w.starts_at,
    updated_at = now(),
    current_detailed_status = CASE WHEN r.status = 'queued'
        THEN 'waiting for capacity: #' || w.position || ' in the ' || r.gpu_type || ' queue'
        ELSE r.current_detailed_status END
FROM unnest(%(reservation_ids)b::uuid[], %(positions)b::int[], %(starts_at)b::timestamptz[])
    AS w (reservation_id, position, starts_at)
WHERE r.reservation_id = w.reservation_id AND r.status IN ('pending', 'queued')
  AND r.granted_at IS NULL
  AND (r.queue_position, r.estimated_start_at) IS DISTINCT FROM (w.position, w.starts_at)
