-- Every type's availability in one statement. Only availability columns are written: the
-- static configuration belongs to the catalogue migrations. max_nodes_since moves only when
-- max_nodes changes (on the right of SET, g.max_nodes is the value before this update).
UPDATE gpu_types AS g SET
    total_cluster_gpus           = v.total,
    available_gpus               = v.available,
    max_reservable               = v.max_reservable,
    full_nodes_available         = v.full_nodes,
    running_instances            = v.running,
    desired_capacity             = v.desired,
    max_per_node                 = v.max_per_node,
    max_nodes                    = v.max_nodes,
    max_nodes_since              = CASE
        WHEN g.max_nodes_since IS NULL OR g.max_nodes <> v.max_nodes THEN now()
        ELSE g.max_nodes_since
    END,
    last_availability_update     = now(),
    last_availability_updated_by = %(updated_by)s
FROM unnest(
    %(gpu_type)s::text[], %(total_cluster_gpus)s::int[], %(available_gpus)s::int[],
    %(max_reservable)s::int[], %(full_nodes_available)s::int[], %(running_instances)s::int[],
    %(desired_capacity)s::int[], %(max_per_node)s::int[], %(max_nodes)s::int[]
) AS v (gpu_type, total, available, max_reservable, full_nodes, running, desired, max_per_node,
        max_nodes)
WHERE g.gpu_type = v.gpu_type
