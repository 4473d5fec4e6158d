SELECT n.node_name, n.gpu_type, n.slots, n.schedulable, n.profiling,
       coalesce(array_agg(a.slot ORDER BY a.slot) FILTER (WHERE a.slot IS NOT NULL), '{}')
           AS allocated,
       coalesce(array_agg(DISTINCT a.reservation_id::text)
                    FILTER (WHERE a.reservation_id IS NOT NULL), '{}') AS holders
FROM cluster_nodes n
LEFT JOIN allocations a USING (node_name)
GROUP BY n.node_name
ORDER BY n.node_name
