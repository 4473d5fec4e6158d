-- One run's samples, one statement (under utilisation/try_lock.sql): the samples of
-- active reservations' GPUs; each weighs the seconds since the GPU's previous sample
-- (for a first one, since launch, at most the run's period; at most two periods, so a gap
-- is not counted as use), added to the reservation's hour (gpu_usage_hourly); samples older than the window
-- are deleted by the same statement, so the table stays bounded.
WITH sample AS (
    SELECT s.*, r.launched_at
    FROM unnest(
        %(reservation_id)s::uuid[], %(gpu)s::text[], %(util_percent)s::real[],
        %(memory_used_mib)s::real[]
    ) AS s(reservation_id, gpu, util_percent, memory_used_mib)
    JOIN reservations AS r USING (reservation_id)
    WHERE r.status = 'active'
), weighted AS (
    SELECT sample.*,
           least(
               coalesce(
                   extract(epoch FROM %(sampled_at)s::timestamptz - previous.sampled_at),
                   greatest(0, least(
                       extract(epoch FROM %(sampled_at)s::timestamptz - sample.launched_at),
                       %(period_seconds)s
                   ))
               ),
               2 * %(period_seconds)s
           )::double precision AS seconds
    FROM sample
    LEFT JOIN LATERAL (
        SELECT g.sampled_at FROM gpu_samples AS g
        WHERE g.reservation_id = sample.reservation_id AND g.gpu = sample.gpu
        ORDER BY g.sampled_at DESC LIMIT 1
    ) AS previous ON true
), inserted AS (
    INSERT INTO gpu_samples (reservation_id, gpu, sampled_at, util_percent, memory_used_mib)
    SELECT reservation_id, gpu, %(sampled_at)s, util_percent, memory_used_mib FROM weighted
    ON CONFLICT DO NOTHING
    RETURNING reservation_id
), rolled AS (
    INSERT INTO gpu_usage_hourly AS h (
        reservation_id, hour, gpu_seconds, busy_gpu_seconds, util_percent_seconds,
        peak_memory_mib
    )
    SELECT reservation_id, date_trunc('hour', %(sampled_at)s::timestamptz), sum(seconds),
           coalesce(sum(seconds) FILTER (WHERE util_percent >= %(busy_percent)s), 0),
           sum(seconds * util_percent), max(memory_used_mib)
    FROM weighted
    GROUP BY reservation_id
    ON CONFLICT (reservation_id, hour) DO UPDATE SET
        gpu_seconds = h.gpu_seconds + excluded.gpu_seconds,
        busy_gpu_seconds = h.busy_gpu_seconds + excluded.busy_gpu_seconds,
        util_percent_seconds = h.util_percent_seconds + excluded.util_percent_seconds,
        peak_memory_mib = greatest(h.peak_memory_mib, excluded.peak_memory_mib)
    RETURNING reservation_id
), pruned AS (
    DELETE FROM gpu_samples
    WHERE sampled_at < %(sampled_at)s::timestamptz - make_interval(secs => %(window_seconds)s)
    RETURNING 1
)
SELECT (SELECT count(*) FROM inserted) AS samples, (SELECT count(*) FROM pruned) AS pruned
