-- The row the sweeper is about to end, locked for its transaction, only if it is still as
-- the sweeper judged it (live, with the same execution or still none): a run never ends a
-- reservation that moved on while it looked. lifecycle/end.sql then ends it, the same
-- statement tear down uses.
SELECT reservation_id
FROM reservations
WHERE reservation_id = %(reservation_id)s
  AND status IN ('pending', 'queued', 'preparing', 'active')
  AND execution_arn IS NOT DISTINCT FROM %(execution_arn)s
FOR UPDATE
