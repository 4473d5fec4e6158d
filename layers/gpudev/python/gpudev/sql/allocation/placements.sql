-- The reservation's nodes by rank, with their addresses.
SELECT a.rank, a.node_name, n.node_ip, n.external_address, count(*)::int AS slots
FROM allocations a
JOIN cluster_nodes n USING (node_name)
WHERE a.reservation_id = %(reservation_id)s
GROUP BY a.rank, a.node_name, n.node_ip, n.external_address
ORDER BY a.rank
