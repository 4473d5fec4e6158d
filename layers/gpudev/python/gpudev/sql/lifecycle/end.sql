-- The final status, once: a reservation that already ended keeps its first ending. A cancel
-- an operator requested keeps the operator's recorded reason (migration 0018).
UPDATE reservations SET
    status = %(status)s,
    task_token = NULL,
    queue_position = NULL,
    estimated_start_at = NULL,
    current_detailed_status = CASE
        WHEN %(status)s = 'cancelled' AND cancel_reason IS NOT NULL THEN cancel_reason
        ELSE %(detail)s
    END,
    cancelled_at = CASE WHEN %(status)s = 'cancelled' THEN now() END,
    failed_at = CASE WHEN %(status)s = 'failed' THEN now() END,
    failure_reason = CASE WHEN %(status)s = 'failed' THEN %(detail)s END,
    reservation_ended = now()
WHERE reservation_id = %(reservation_id)s
  AND status NOT IN ('cancelled', 'expired', 'failed')
RETURNING *
