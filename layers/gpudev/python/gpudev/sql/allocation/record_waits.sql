UPDATE reservations r SET
    queue_position = w.position,
    estimated_wait_minutes = w.minutes,
    current_detailed_status = 'waiting for capacity: #' || w.position || ' in the '
        || r.gpu_type || ' queue'
FROM unnest(%(reservation_ids)b::uuid[], %(positions)b::int[], %(minutes)b::int[])
    AS w (reservation_id, position, minutes)
WHERE r.reservation_id = w.reservation_id
  AND (r.queue_position IS DISTINCT FROM w.position
       OR r.estimated_wait_minutes IS DISTINCT FROM w.minutes)
