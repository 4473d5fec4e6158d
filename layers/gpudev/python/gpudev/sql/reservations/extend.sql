-- duration_hours is the total since launch; the execution moves expires_at when it
-- applies this generation. reservations_total_hours_check caps the total at 48 h.
-- With the outbox row of its reservation_changed job, in the same statement.
WITH changed AS (
    UPDATE reservations SET
        duration_hours = duration_hours + %(hours)s,
        extension_error = NULL,
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
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
