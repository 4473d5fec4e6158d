-- The final status, once: a reservation that already ended keeps its first ending. Every
-- ending records why in failure_reason (its first name; it holds the reason of any ending)
-- and in the status line: the path's reason, or for a cancel an operator requested, the
-- operator's (migration 0018). reservations_ending_reason_check refuses an ending without.
UPDATE reservations SET
    status = %(status)s,
    task_token = NULL,
    queue_position = NULL,
    estimated_start_at = NULL,
    current_detailed_status = CASE
        WHEN %(status)s = 'cancelled' AND nullif(btrim(cancel_reason), '') IS NOT NULL
            THEN cancel_reason
        ELSE %(detail)s
    END,
    cancelled_at = CASE WHEN %(status)s = 'cancelled' THEN now() END,
    failed_at = CASE WHEN %(status)s = 'failed' THEN now() END,
    failure_reason = CASE
        WHEN %(status)s = 'cancelled' AND nullif(btrim(cancel_reason), '') IS NOT NULL
            THEN cancel_reason
        ELSE %(detail)s
    END,
    reservation_ended = now()
WHERE reservation_id = %(reservation_id)s
  AND status NOT IN ('cancelled', 'expired', 'failed')
RETURNING *
