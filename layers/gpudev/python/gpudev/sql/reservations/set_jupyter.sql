-- Returns the row only when the setting changed (and the reservation is live), with the
-- outbox row of its reservation_changed job, in the same statement (outbox_write,
-- migrations/0010).
WITH changed AS (
    UPDATE reservations SET
        jupyter_enabled = %(enabled)s,
        change_generation = change_generation + 1
    WHERE reservation_id = %(reservation_id)s
      AND status IN ('pending', 'queued', 'preparing', 'active')
      AND jupyter_enabled IS DISTINCT FROM %(enabled)s
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(
    reservation_changed_job(changed.reservation_id, changed.user_id, changed.change_generation)
) job
