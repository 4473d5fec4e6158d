-- Every live reservation, with what the sweeper needs to judge it (reservations_live_idx),
-- and the reservations of the objects it listed that have ended, with `reservation_ended`
-- (their objects are leftovers only if they ended well before the listing began).
-- A requested change comes with what repairing it needs: the parked execution's token and
-- the age of its last change wake (change_wakes), so a cancel or change whose job
-- dead-lettered wakes the execution from here (sweeper/plan.py `wakes`).
-- now() comes along so the plan compares ages with the database's clock, not the function's.
SELECT
    reservation_id,
    user_id,
    status,
    execution_arn,
    created_at,
    cancel_requested_at,
    create_job_resends,
    create_job_resent_at,
    now() AS read_at,
    reservation_ended,
    task_token,
    change_generation,
    applied_generation,
    (
        SELECT extract(epoch FROM now() - w.woken_at)::double precision
        FROM change_wakes AS w
        WHERE w.reservation_id = reservations.reservation_id
    ) AS change_woken_seconds
FROM reservations
WHERE status IN ('pending', 'queued', 'preparing', 'active')
   OR reservation_id = ANY(%(object_reservation_ids)s::uuid[])
