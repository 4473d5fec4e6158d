-- Slots held by ended reservations, ended reservations without a reason, reservations not
-- ended.
SELECT
    (SELECT count(*) FROM allocations a JOIN reservations r USING (reservation_id)
      WHERE r.status IN ('expired', 'cancelled', 'failed')) AS slots_held_by_ended,
    (SELECT count(*) FROM reservations
      WHERE status IN ('expired', 'cancelled', 'failed')
        AND coalesce(nullif(failure_reason, ''), nullif(current_detailed_status, ''))
            IS NULL) AS ended_without_reason,
    (SELECT count(*) FROM reservations
      WHERE status NOT IN ('expired', 'cancelled', 'failed')) AS not_ended
