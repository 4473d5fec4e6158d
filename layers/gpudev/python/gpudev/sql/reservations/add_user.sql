-- Returns the row only when the user was added (not already there in any letter case,
-- reservation live), with the outbox row of its reservation_changed job, in the same
-- statement (outbox_write, migrations/0010).
WITH changed AS (
    UPDATE reservations SET
        secondary_users = secondary_users || %(github_user)s::text,
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
      -- GitHub logins are case-insensitive: Octo-Cat is octo-cat, already there
      AND NOT (lower(%(github_user)s::text) = ANY (SELECT lower(u) FROM unnest(secondary_users) u))
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(
    reservation_changed_job(changed.reservation_id, changed.user_id, changed.change_generation)
) job
