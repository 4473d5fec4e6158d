-- The cluster's nodes as this pass saw them: upserted with their slot counts, slots added
-- (and unallocated surplus slots removed), nodes no longer listed made unschedulable.
WITH seen AS (
    SELECT s.* FROM unnest(
        %(name)b::text[], %(gpu_type)b::text[], %(slots)b::int[], %(schedulable)b::boolean[],
        %(node_ip)b::text[], %(external_address)b::text[]
    ) AS s (node_name, gpu_type, slots, schedulable, node_ip, external_address)
    JOIN gpu_types USING (gpu_type)
),
upserted AS (
    INSERT INTO cluster_nodes (
        node_name, gpu_type, slots, schedulable, node_ip, external_address, seen_at
    )
    SELECT node_name, gpu_type, slots, schedulable, node_ip, external_address, now() FROM seen
    ON CONFLICT (node_name) DO UPDATE SET
        gpu_type = excluded.gpu_type, slots = excluded.slots,
        schedulable = excluded.schedulable, node_ip = excluded.node_ip,
        external_address = excluded.external_address, seen_at = now()
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
USING upserted u
WHERE ns.node_name = u.node_name AND ns.slot >= u.slots
  AND NOT EXISTS (
      SELECT 1 FROM allocations a WHERE a.node_name = ns.node_name AND a.slot = ns.slot
  )
