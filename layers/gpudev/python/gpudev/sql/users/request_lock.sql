-- The caller's request lock until the transaction ends (class 7346002, the username's
-- hash): every request that must see the caller's other requests (a submit, which counts
-- live reservations and reads the named disk; a rename or delete of a disk, which checks no
-- live reservation names it) takes it in its own statement first, so the statements that
-- follow take their snapshots after it and see what the request before them committed.
SELECT pg_advisory_xact_lock(7346002, hashtext(%(user_id)s))
