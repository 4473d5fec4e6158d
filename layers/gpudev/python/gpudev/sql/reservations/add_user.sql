-- Returns the row only when the user was added (not already there in any letter case,
-- reservation live), with the outbox row of its reservation_changed job, in the same
-- statement.
WITH changed AS (
    UPDATE reservations SET
        secondary_users = secondary_users || %(github_user)s::text,
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
      -- GitHub logins are case-insensitive: Octo-Cat is octo-cat, already there
      AND NOT (lower(%(github_user)s::text) = ANY (SELECT lower(u) FROM unnest(secondary_users) u))
    RETURNING *
),
outboxed AS (
    INSERT INTO outbox (payload)
    SELECT jsonb_build_object(
        'kind', 'reservation_changed',
        'reservation_id', changed.reservation_id,
        'user_id', changed.user_id,
        'change_generation', changed.change_generation
    )
    FROM changed
    RETURNING outbox_id, payload
)
SELECT changed.*, outboxed.outbox_id, outboxed.payload AS outbox_payload
FROM changed, outboxed
