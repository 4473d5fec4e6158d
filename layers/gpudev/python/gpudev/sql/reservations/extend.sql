-- duration_hours is the total since launch; the execution moves expires_at when it
-- applies this generation. reservations_total_hours_check caps the total at 48 h.
-- With the outbox row of its reservation_changed job, in the same statement (outbox_write,
-- migrations/0010).
WITH changed AS (
    UPDATE reservations SET
        duration_hours = duration_hours + %(hours)s,
        extension_error = NULL,
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(
    reservation_changed_job(changed.reservation_id, changed.user_id, changed.change_generation)
) job
