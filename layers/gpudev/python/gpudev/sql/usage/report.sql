-- One usage report in one round trip: GPU-hours by user, type and UTC day; queue waits by
-- type; endings by outcome and reason; and, for everyone's report only, the fleet's
-- utilisation; and GPU-seconds used (busy per the DCGM exporters) beside sampled, by user
-- and type, from the hourly rollups of the hours starting in the window (migration 0040).
-- The functions are migration 0018's; `username` NULL means everyone.
SELECT
    (SELECT coalesce(jsonb_agg(to_jsonb(h) ORDER BY h.day, h.gpu_type, h.username), '[]')
     FROM usage_gpu_hours(%(since)s, %(until)s, %(as_of)s, %(username)s::text) h
    ) AS gpu_hours,
    (SELECT coalesce(jsonb_agg(to_jsonb(w) ORDER BY w.gpu_type), '[]')
     FROM usage_queue_waits(%(since)s, %(until)s, %(as_of)s, %(username)s::text) w
    ) AS queue_waits,
    (SELECT coalesce(
        jsonb_agg(to_jsonb(o) ORDER BY o.outcome, o.reservations DESC, o.reason), '[]')
     FROM usage_outcomes(%(since)s, %(until)s, %(as_of)s, %(username)s::text) o
    ) AS outcomes,
    (SELECT coalesce(jsonb_agg(to_jsonb(u) ORDER BY u.gpu_type), '[]')
     FROM usage_fleet_utilisation(%(since)s, %(until)s, %(as_of)s) u
     WHERE %(username)s::text IS NULL
    ) AS utilisation,
    (SELECT coalesce(jsonb_agg(to_jsonb(g) ORDER BY g.username, g.gpu_type), '[]')
     FROM (
        SELECT r.user_id AS username, r.gpu_type,
               sum(h.busy_gpu_seconds) AS busy_gpu_seconds,
               sum(h.gpu_seconds) AS sampled_gpu_seconds,
               sum(h.util_percent_seconds) / nullif(sum(h.gpu_seconds), 0)
                   AS mean_util_percent
        FROM gpu_usage_hourly AS h
        JOIN reservations AS r USING (reservation_id)
        WHERE h.hour >= date_trunc('hour', %(since)s::timestamptz) AND h.hour < %(until)s
          AND (%(username)s::text IS NULL OR r.user_id = %(username)s::text)
        GROUP BY r.user_id, r.gpu_type
     ) g
    ) AS gpu_seconds_used
