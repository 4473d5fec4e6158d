-- Reservations the lifecycle is still working on: submitted and not yet placed in the queue,
-- or granted and not yet active. Queued reservations wait for capacity (no work until then),
-- active ones wait on their clock, ended ones are done.
SELECT count(*) FROM reservations WHERE status IN ('pending', 'preparing')
