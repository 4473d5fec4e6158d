-- One job of a disk at a time (class 7346003, the disk's id): a later job waits here
-- (lock_timeout bounds it; the message is then retried), so two jobs never tag the same
-- disk's resources at once. Session-level, released by operation_unlock.
SELECT pg_advisory_lock(7346003, hashtext(%(disk_id)s::text))
