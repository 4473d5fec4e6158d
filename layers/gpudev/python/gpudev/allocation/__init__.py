"""The allocator: the only writer of allocations (pure decisions in plan.py, the database
and the signals in service.py)."""
