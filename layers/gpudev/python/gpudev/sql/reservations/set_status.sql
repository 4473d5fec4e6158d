-- A status change; an ending records its reason (the detail) in failure_reason too, as
-- lifecycle/end.sql does.
UPDATE reservations SET
    status = %(status)s,
    current_detailed_status = coalesce(%(detail)s, current_detailed_status),
    cancelled_at = CASE WHEN %(status)s = 'cancelled' THEN now() ELSE cancelled_at END,
    failed_at = CASE WHEN %(status)s = 'failed' THEN now() ELSE failed_at END,
    failure_reason = CASE
        WHEN %(status)s IN ('cancelled', 'expired', 'failed') THEN %(detail)s
        ELSE failure_reason
    END,
    reservation_ended = CASE
        WHEN %(status)s IN ('cancelled', 'expired', 'failed') THEN now()
        ELSE reservation_ended
    END
WHERE reservation_id = %(reservation_id)s
RETURNING *
