-- The reservation's nodes by rank, with their addresses and whether each is a dedicated
-- profiling node (its pod then selects and tolerates that).
SELECT a.rank, a.node_name, n.node_ip, n.external_address, count(*)::int AS slots, n.profiling
FROM allocations a
JOIN cluster_nodes n USING (node_name)
WHERE a.reservation_id = %(reservation_id)s
GROUP BY a.rank, a.node_name, n.node_ip, n.external_address, n.profiling
ORDER BY a.rank
