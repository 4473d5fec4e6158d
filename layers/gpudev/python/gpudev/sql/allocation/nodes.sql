SELECT n.node_name, n.gpu_type, n.slots, n.schedulable, n.profiling,
       coalesce(array_agg(a.slot ORDER BY a.slot) FILTER (WHERE a.slot IS NOT NULL), '{}')
           AS allocated,
       coalesce(array_agg(DISTINCT a.reservation_id::text)
                    FILTER (WHERE a.reservation_id IS NOT NULL), '{}') AS holders,
       -- held (in part, if granted before 0027 or the node grew since) by a profiling
       -- reservation: nothing on it is offered to anyone else
       coalesce(bool_or(r.profiling), false) AS held_by_profiling,
       n.fabric
FROM cluster_nodes n
LEFT JOIN allocations a USING (node_name)
LEFT JOIN reservations r ON r.reservation_id = a.reservation_id
GROUP BY n.node_name
ORDER BY n.node_name
