-- One Elastic IP step at a time (gpudev/cluster/addresses.py): two overlapping availability
-- runs would each allocate an address for the same new node. Session-scoped: the step calls
-- EC2 outside any transaction; node_addresses/unlock.sql gives it back, and so does a lost
-- session.
SELECT pg_try_advisory_lock(%(key)s)
