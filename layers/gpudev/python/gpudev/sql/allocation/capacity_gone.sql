-- Waiting reservations their type can no longer ever hold: the availability updater has
-- measured the type's node groups (max_nodes: the sum of their MaxSize) below what the
-- reservation needs, and they have stayed so for the patience (max_nodes_since). Only types
-- that cannot hold their largest request are joined (a single-node type: no node at all; a
-- multinode one: fewer than most_nodes), so a pass over a queue of types that have their
-- nodes reads no reservation. At most `batch` a pass (the next pass takes the rest), locked:
-- the pass ends them.
SELECT r.reservation_id, r.task_token, r.gpu_type, r.total_nodes
FROM gpu_types g
JOIN reservations r ON r.gpu_type = g.gpu_type
WHERE g.is_active
  AND g.last_availability_update IS NOT NULL
  AND g.max_nodes < CASE
      WHEN g.gpu_type = ANY(%(multinode_types)s) AND g.max_per_node = 8 THEN %(most_nodes)s
      ELSE 1
  END
  AND g.max_nodes_since <= now() - make_interval(secs => %(patience_seconds)s)
  AND r.status = 'queued' AND r.granted_at IS NULL AND r.task_token IS NOT NULL
  AND r.cancel_requested_at IS NULL
  AND r.total_nodes > g.max_nodes
ORDER BY r.reservation_id
LIMIT %(batch)s
FOR UPDATE OF r
