-- One sweeper run at a time. Session-scoped, not transaction-scoped: the run commits as it
-- goes (the allocator pass it ends with commits before it signals), so the lock must
-- outlive each transaction; sweeper/unlock.sql gives it back, and so does a lost session.
SELECT pg_try_advisory_lock(%(key)s)
