-- Work the lifecycle still has to do for what a run submitted: reservations not yet placed
-- in the queue or granted and not yet active, cancels asked for and not yet torn down (an
-- end grants the queue's next), and jobs written to the outbox and not yet sent. Queued
-- reservations with no cancel wait for capacity; active ones wait on their clock.
SELECT
    (SELECT count(*) FROM reservations
     WHERE status IN ('pending', 'preparing')
        OR (cancel_requested_at IS NOT NULL
            AND status NOT IN ('cancelled', 'expired', 'failed')))
    + (SELECT count(*) FROM outbox)
