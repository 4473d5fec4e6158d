-- One purge at a time (transaction-scoped; a second run records `skipped`).
SELECT pg_try_advisory_xact_lock(%(key)s)
