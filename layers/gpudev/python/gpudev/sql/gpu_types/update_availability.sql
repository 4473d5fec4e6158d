-- Every type's availability in one statement. Only availability columns are written: the
-- static configuration belongs to the catalogue migrations.
UPDATE gpu_types AS g SET
    total_cluster_gpus           = v.total,
    available_gpus               = v.available,
    max_reservable               = v.max_reservable,
    full_nodes_available         = v.full_nodes,
    running_instances            = v.running,
    desired_capacity             = v.desired,
    max_per_node                 = v.max_per_node,
    last_availability_update     = now(),
    last_availability_updated_by = %(updated_by)s
FROM unnest(
    %(gpu_type)s::text[], %(total_cluster_gpus)s::int[], %(available_gpus)s::int[],
    %(max_reservable)s::int[], %(full_nodes_available)s::int[], %(running_instances)s::int[],
    %(desired_capacity)s::int[], %(max_per_node)s::int[]
) AS v (gpu_type, total, available, max_reservable, full_nodes, running, desired, max_per_node)
WHERE g.gpu_type = v.gpu_type
