SELECT n.node_name, n.gpu_type, n.slots, n.schedulable,
       coalesce(array_agg(a.slot ORDER BY a.slot) FILTER (WHERE a.slot IS NOT NULL), '{}')
           AS allocated
FROM cluster_nodes n
LEFT JOIN allocations a USING (node_name)
GROUP BY n.node_name
ORDER BY n.node_name
