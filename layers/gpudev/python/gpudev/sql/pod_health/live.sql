-- The reservations whose pods the updater watches: active ones, with what it last recorded.
SELECT reservation_id, total_nodes, launched_at, task_token, pod_restarts, oom_count,
       last_oom_at, health_warning, health_ending
FROM reservations
WHERE status = 'active'
ORDER BY reservation_id
