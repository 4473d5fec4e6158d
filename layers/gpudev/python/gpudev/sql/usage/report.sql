-- One usage report in one round trip: GPU-hours by user, type and UTC day; queue waits by
-- type; endings by outcome and reason; and, for everyone's report only, the fleet's
-- utilisation. The functions are migration 0018's; `username` NULL means everyone.
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
    ) AS utilisation
