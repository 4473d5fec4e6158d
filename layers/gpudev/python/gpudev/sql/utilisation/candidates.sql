-- The active reservations idle reclaim judges, and whether another reservation waits in
-- the queue for the same GPU type (the `when-waiting` policy). A reservation of no GPUs (a
-- CPU type) has nothing to judge: it is never a candidate, and its row is never written.
SELECT r.reservation_id, r.gpu_type, r.launched_at, r.task_token, r.idle_timeout_minutes,
       r.idle_active_at, r.idle_warning, r.idle_warned_at, r.idle_ending,
       EXISTS (
           SELECT 1 FROM reservations AS q
           WHERE q.status = 'queued' AND q.gpu_type = r.gpu_type
       ) AS others_waiting
FROM reservations AS r
WHERE r.status = 'active' AND r.launched_at IS NOT NULL AND r.gpu_count > 0
ORDER BY r.reservation_id
