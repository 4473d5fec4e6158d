-- Live allocations with what tells when they end: expires_at once active, else the grant
-- time and the duration (the caller adds the provisioning allowance).
SELECT a.node_name, count(*)::int AS slots, r.expires_at, r.granted_at, r.duration_hours
FROM allocations a
JOIN reservations r USING (reservation_id)
GROUP BY a.node_name, r.reservation_id
