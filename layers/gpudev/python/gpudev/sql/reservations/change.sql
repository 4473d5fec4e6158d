-- Every change an owner makes to a live reservation, in one statement: the parameter of the
-- change asked for is set and the others are NULL (extend: add_hours; add a user:
-- github_user; remove a user: remove_user; Jupyter: jupyter_enabled). Returns the row only when it changed, with the
-- outbox row of its reservation_changed job, in the same statement (outbox_write,
-- migrations/0010).
-- duration_hours is the total since launch; the execution moves expires_at when it applies
-- this generation. reservations_total_hours_check caps the total at 48 h. An extension
-- writes its history entry (reservation_events, status unchanged) with the expiry it gives
-- (launched_at + the total; a reservation not started yet counts its hours from its start).
WITH changed AS (
    UPDATE reservations SET
        duration_hours = duration_hours + coalesce(%(add_hours)s::double precision, 0),
        -- an extension clears the error of the previous one
        extension_error = CASE
            WHEN %(add_hours)s::double precision IS NULL THEN extension_error
        END,
        secondary_users = CASE
            WHEN %(github_user)s::text IS NOT NULL THEN secondary_users || %(github_user)s::text
            WHEN %(remove_user)s::text IS NOT NULL THEN ARRAY(
                SELECT u FROM unnest(secondary_users) WITH ORDINALITY AS kept (u, position)
                WHERE lower(u) <> lower(%(remove_user)s::text)
                ORDER BY position
            )
            ELSE secondary_users
        END,
        jupyter_enabled = coalesce(%(jupyter_enabled)s::boolean, jupyter_enabled),
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
      -- GitHub logins are case-insensitive: Octo-Cat is octo-cat, already there
      AND (
          %(github_user)s::text IS NULL
          OR NOT (lower(%(github_user)s::text) = ANY (SELECT lower(u) FROM unnest(secondary_users) u))
      )
      -- and a user removed must be there (the service says so before: this is the race)
      AND (
          %(remove_user)s::text IS NULL
          OR lower(%(remove_user)s::text) = ANY (SELECT lower(u) FROM unnest(secondary_users) u)
      )
      AND (
          %(jupyter_enabled)s::boolean IS NULL
          OR jupyter_enabled IS DISTINCT FROM %(jupyter_enabled)s::boolean
      )
    RETURNING *
), extension AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT
        reservation_id,
        status,
        status,
        format('extended by %%s h to %%s h in total', %(add_hours)s::double precision, duration_hours)
        || CASE
            WHEN launched_at IS NULL THEN ': the hours count from its start'
            ELSE ': expires at ' || to_char(
                (launched_at + make_interval(secs => duration_hours * %(seconds_per_hour)s))
                    AT TIME ZONE 'UTC',
                'YYYY-MM-DD HH24:MI:SS'
            ) || ' UTC'
        END,
        'extension'
    FROM changed
    WHERE %(add_hours)s::double precision IS NOT NULL
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(
    reservation_changed_job(changed.reservation_id, changed.user_id, changed.change_generation)
) job
