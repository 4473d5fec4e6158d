-- Every pair (earlier, later) of reservations of the same GPU type and count where `later`
-- was granted while `earlier` was waiting in the queue: queued before the grant, and neither
-- granted, out of the queue nor being cancelled by then. The allocator (gpudev/allocation/
-- plan.py) is first come first served with EASY backfill: a later request may start first
-- only if it runs on capacity the head of the queue does not need, or ends before the head's
-- reserved start. So a later request of the same shape passes an earlier one legitimately
-- when it asked for less time (it ends before the head's start, the earlier one would not);
-- asking for as much time or more, it fits only where the earlier one fits, and the earlier
-- one is placed first in the same pass: that is a violation. Hours are as requested (an
-- extension, once active, raises duration_hours afterwards). `head`: the earliest created
-- reservation of the type waiting at the grant. Profiling is another shape (whole nodes),
-- so a pair is of the same profiling too.
WITH requested AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(hours)s::float8[]) AS q (reservation_id, hours)
),
queue AS (
    SELECT r.reservation_id, r.gpu_type, r.gpu_count, r.profiling, q.hours, r.created_at,
           r.granted_at,
           r.cancel_requested_at,
           (SELECT min(e.at) FROM reservation_events e
             WHERE e.reservation_id = r.reservation_id AND e.to_status = 'queued') AS queued_at,
           (SELECT min(e.at) FROM reservation_events e
             WHERE e.reservation_id = r.reservation_id AND e.from_status = 'queued') AS left_at
    FROM reservations r
    JOIN requested q USING (reservation_id)
)
SELECT earlier.hours <= later.hours AS violation,
       later.gpu_type, later.gpu_count,
       left(earlier.reservation_id::text, 8) AS earlier_id, earlier.hours AS earlier_hours,
       earlier.created_at AS earlier_created, earlier.granted_at AS earlier_granted,
       left(later.reservation_id::text, 8) AS later_id, later.hours AS later_hours,
       later.created_at AS later_created, later.granted_at AS later_granted,
       left(head.reservation_id::text, 8) AS head_id, head.gpu_count AS head_gpus,
       head.hours AS head_hours
FROM queue later
JOIN queue earlier
  ON earlier.gpu_type = later.gpu_type AND earlier.gpu_count = later.gpu_count
 AND earlier.profiling = later.profiling
 AND earlier.created_at < later.created_at
LEFT JOIN LATERAL (
    SELECT w.reservation_id, w.gpu_count, w.hours FROM queue w
    WHERE w.gpu_type = later.gpu_type
      AND w.queued_at < later.granted_at
      AND coalesce(w.granted_at, 'infinity') > later.granted_at
      AND coalesce(w.left_at, 'infinity') > later.granted_at
      AND coalesce(w.cancel_requested_at, 'infinity') > later.granted_at
    ORDER BY w.created_at, w.reservation_id
    LIMIT 1
) head ON true
WHERE later.granted_at IS NOT NULL
  AND earlier.queued_at < later.granted_at
  AND coalesce(earlier.granted_at, 'infinity') > later.granted_at
  AND coalesce(earlier.left_at, 'infinity') > later.granted_at
  AND coalesce(earlier.cancel_requested_at, 'infinity') > later.granted_at
ORDER BY violation DESC, later.granted_at
