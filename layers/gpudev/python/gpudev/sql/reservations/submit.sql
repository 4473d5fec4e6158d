-- The caller's user row (created on first call, bound to the caller's principal) and the
-- reservation, in one round trip, within the per-user limits. Runs after submit_context in
-- the same transaction, so it holds the caller's request lock (users/request_lock.sql) and its snapshot sees every
-- committed reservation.
-- One row: whether the username is bound to the caller's principal (`bound`), the user's
-- live usage before this request, then either the new reservation (outcome 'created'), the
-- one already recorded for this client request id ('repeated', returned whatever the
-- usage), or nothing (outcome NULL: over a limit, or not bound; nothing inserted).
-- Not bound: another principal's first call bound the username after the submit checked
-- the binding (this guards that race); neither a repeat nor a new reservation then.
-- Live: pending, queued, preparing or active, and not being cancelled.
WITH caller AS (
    INSERT INTO users (username, principal_arn)
    VALUES (%(username)s, %(principal_arn)s)
    ON CONFLICT (username) DO UPDATE SET last_seen_at = now()
    WHERE users.principal_arn = EXCLUDED.principal_arn
    RETURNING username
),
repeated AS (
    SELECT reservations.* FROM reservations
    JOIN caller ON caller.username = reservations.user_id
    WHERE reservations.client_request_id = %(client_request_id)s
),
usage AS (
    SELECT count(*)::integer AS live_reservations,
           coalesce(sum(gpu_count), 0)::integer AS live_gpus
    FROM reservations
    WHERE user_id = %(username)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
      AND cancel_requested_at IS NULL
),
inserted AS (
    INSERT INTO reservations (
        reservation_id, user_id, client_request_id, name, gpu_type, gpu_count, total_nodes,
        instance_type, duration_hours, github_user, disk_name, jupyter_enabled, profiling,
        image, image_digest, image_pull, preserve_entrypoint, idle_timeout_minutes,
        image_build, docker
    )
    SELECT %(reservation_id)s, caller.username, %(client_request_id)s, %(name)s, %(gpu_type)s,
           %(gpu_count)s, %(total_nodes)s, %(instance_type)s, %(duration_hours)s,
           %(github_user)s, %(disk_name)s, %(jupyter_enabled)s, %(profiling)s,
           %(image)s, %(image_digest)s, %(image_pull)s, %(preserve_entrypoint)s,
           %(idle_timeout_minutes)s, %(image_build)s, %(docker)s
    FROM caller, usage
    WHERE NOT EXISTS (SELECT FROM repeated)
      AND usage.live_reservations < %(max_live_reservations)s
      AND usage.live_gpus + %(gpu_count)s <= %(max_gpus)s
    ON CONFLICT (user_id, client_request_id) DO NOTHING
    RETURNING *
)
SELECT EXISTS (SELECT FROM caller) AS bound, usage.live_reservations, usage.live_gpus,
       job.outbox_id, job.payload AS outbox_payload,
       found.*
FROM usage
LEFT JOIN (
    SELECT 'created' AS outcome, inserted.* FROM inserted
    UNION ALL
    SELECT 'repeated' AS outcome, repeated.* FROM repeated
) found ON true
-- The create job, in the outbox with the row it announces (sent after commit); NULL: none.
LEFT JOIN LATERAL outbox_write(
    CASE WHEN found.outcome = 'created' THEN jsonb_build_object(
        'kind', 'create_reservation',
        'reservation_id', found.reservation_id,
        'user_id', found.user_id
    ) END
) job ON true
