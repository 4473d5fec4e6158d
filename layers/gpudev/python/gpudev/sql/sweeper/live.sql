-- Every live reservation, with what the sweeper needs to judge it (reservations_live_idx).
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
    now() AS read_at
FROM reservations
WHERE status IN ('pending', 'queued', 'preparing', 'active')
