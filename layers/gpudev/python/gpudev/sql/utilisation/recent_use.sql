-- The caller's active reservations' GPU use since a moment (the last 15 clock minutes):
-- the mean utilisation over every GPU and sample, and the memory in use at the newest.
SELECT s.reservation_id,
       round(avg(s.util_percent)::numeric, 1)::double precision AS util_percent,
       count(DISTINCT s.gpu)::integer AS gpus_seen
FROM gpu_samples AS s
JOIN reservations AS r USING (reservation_id)
WHERE r.user_id = %(user_id)s AND r.status = 'active' AND s.sampled_at >= %(since)s
GROUP BY s.reservation_id
