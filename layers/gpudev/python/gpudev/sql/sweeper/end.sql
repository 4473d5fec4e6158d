-- A reservation the sweeper ends: as lifecycle/end.sql, and only if the row is still as
-- the sweeper judged it (live, with the same execution or still none), so a run never ends
-- a reservation that moved on while it looked.
UPDATE reservations SET
    status = %(status)s,
    task_token = NULL,
    queue_position = NULL,
    estimated_wait_minutes = NULL,
    current_detailed_status = %(detail)s,
    cancelled_at = CASE WHEN %(status)s = 'cancelled' THEN now() END,
    failed_at = CASE WHEN %(status)s = 'failed' THEN now() END,
    failure_reason = CASE WHEN %(status)s = 'failed' THEN %(detail)s END,
    reservation_ended = now()
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
  AND execution_arn IS NOT DISTINCT FROM %(execution_arn)s
RETURNING reservation_id
