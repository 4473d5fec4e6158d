-- Waiting reservations their type can no longer ever hold: the availability updater has
-- measured the type's node groups (max_nodes: the sum of their MaxSize) below what the
-- reservation needs, and they have stayed so for the patience (max_nodes_since). Only types
-- that cannot hold the largest request are joined (most_nodes), so a pass over a long
-- queue of types that have their nodes reads no reservation. Locked: the pass ends them.
SELECT r.reservation_id, r.task_token, r.gpu_type, r.total_nodes
FROM gpu_types g
JOIN reservations r ON r.gpu_type = g.gpu_type
WHERE g.is_active
  AND g.last_availability_update IS NOT NULL
  AND g.max_nodes < %(most_nodes)s
  AND g.max_nodes_since <= now() - make_interval(secs => %(patience_seconds)s)
  AND r.status = 'queued' AND r.granted_at IS NULL AND r.task_token IS NOT NULL
  AND r.cancel_requested_at IS NULL
  AND r.total_nodes > g.max_nodes
ORDER BY r.reservation_id
FOR UPDATE OF r
