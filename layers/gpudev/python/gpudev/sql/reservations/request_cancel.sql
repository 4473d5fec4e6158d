-- Record the cancel request once; returns the row only the first time, with the outbox row
-- of its cancel_reservation job, written in the same statement (sent after commit). An
-- operator's force-cancel records its reason (NULL for the owner's own cancel).
WITH changed AS (
    UPDATE reservations SET cancel_requested_at = now(), cancel_reason = %(reason)s::text
    WHERE reservation_id = %(reservation_id)s
      AND cancel_requested_at IS NULL
      AND status IN ('pending', 'queued', 'preparing', 'active')
    RETURNING *
)
SELECT changed.*, job.outbox_id, job.payload AS outbox_payload
FROM changed
CROSS JOIN LATERAL outbox_write(jsonb_build_object(
    'kind', 'cancel_reservation',
    'reservation_id', changed.reservation_id,
    'user_id', changed.user_id
)) job
