-- The cluster's nodes as this pass saw them, writing only what changed: a node new or changed
-- (type, slots, schedulable, addresses, profiling, fabric) is upserted and gets the slots it lacks; nodes no
-- longer listed are made unschedulable; an unallocated slot at or past a seen node's count
-- is removed, changed or not (a surplus slot allocated when its node shrank goes once freed).
-- `seen_at` (when a pass last saw the node) is refreshed only when older than 10 minutes,
-- so an unchanged node costs no row version: it is exact to within 10 minutes.
WITH seen AS (
    SELECT s.* FROM unnest(
        %(name)b::text[], %(gpu_type)b::text[], %(slots)b::int[], %(schedulable)b::boolean[],
        %(node_ip)b::text[], %(external_address)b::text[], %(profiling)b::boolean[],
        %(fabric)b::text[]
    ) AS s (node_name, gpu_type, slots, schedulable, node_ip, external_address, profiling, fabric)
    JOIN gpu_types USING (gpu_type)
),
changed AS (
    SELECT s.* FROM seen s
    LEFT JOIN cluster_nodes n USING (node_name)
    WHERE n.node_name IS NULL
       OR (n.gpu_type, n.slots, n.schedulable, n.node_ip, n.external_address, n.profiling,
           n.fabric)
          IS DISTINCT FROM
          (s.gpu_type, s.slots, s.schedulable, s.node_ip, s.external_address, s.profiling,
           s.fabric)
       OR n.seen_at < now() - interval '10 minutes'
),
upserted AS (
    INSERT INTO cluster_nodes (
        node_name, gpu_type, slots, schedulable, node_ip, external_address, profiling, fabric,
        seen_at
    )
    SELECT node_name, gpu_type, slots, schedulable, node_ip, external_address, profiling, fabric,
           now()
    FROM changed
    ON CONFLICT (node_name) DO UPDATE SET
        gpu_type = excluded.gpu_type, slots = excluded.slots,
        schedulable = excluded.schedulable, node_ip = excluded.node_ip,
        external_address = excluded.external_address, profiling = excluded.profiling,
        fabric = excluded.fabric, seen_at = now()
    RETURNING node_name, slots
),
gone AS (
    UPDATE cluster_nodes SET schedulable = false
    WHERE schedulable AND node_name NOT IN (SELECT node_name FROM seen)
    RETURNING node_name
),
added AS (
    INSERT INTO node_slots (node_name, slot)
    SELECT u.node_name, g.slot FROM upserted u, generate_series(0, u.slots - 1) AS g (slot)
    ON CONFLICT DO NOTHING
    RETURNING node_name
)
DELETE FROM node_slots ns
USING seen s
WHERE ns.node_name = s.node_name AND ns.slot >= s.slots
  AND NOT EXISTS (
      SELECT 1 FROM allocations a WHERE a.node_name = ns.node_name AND a.slot = ns.slot
  )
