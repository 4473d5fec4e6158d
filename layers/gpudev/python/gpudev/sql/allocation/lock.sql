-- One allocator pass at a time, for the whole transaction: the only writer of allocations.
SELECT pg_advisory_xact_lock(7346001)
