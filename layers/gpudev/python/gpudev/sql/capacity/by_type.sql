-- Availability per active type with its live demand, in one round trip.
SELECT g.gpu_type, g.instance_type, g.max_per_node, g.total_cluster_gpus, g.available_gpus,
       g.max_reservable, g.full_nodes_available, g.running_instances,
       g.last_availability_update, g.estimated_wait_minutes,
       count(r.reservation_id) FILTER (WHERE r.status IN ('pending', 'queued'))    AS queue_length,
       coalesce(sum(r.gpu_count) FILTER (WHERE r.status IN ('pending', 'queued')), 0)
                                                                      AS queued_gpus,
       count(r.reservation_id) FILTER (WHERE r.status IN ('preparing', 'active'))  AS running_reservations,
       coalesce(sum(r.gpu_count) FILTER (WHERE r.status IN ('preparing', 'active')), 0)
                                                                      AS gpus_in_use
FROM gpu_types g
LEFT JOIN reservations r
       ON r.gpu_type = g.gpu_type AND r.status IN ('pending', 'queued', 'preparing', 'active')
WHERE g.is_active
GROUP BY g.gpu_type
ORDER BY g.max_gpus = 0, g.gpu_type
