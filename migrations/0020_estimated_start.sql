-- A waiting reservation's estimated start as a moment, not minutes from now (issue #18
-- item 3): stored as minutes, every ETA changed as time passed, so every allocator pass
-- rewrote every waiting row. A start moment changes only when the plan does, and readers
-- compute the minutes left at read time. NULL: no estimate (it never fits, or it is not
-- waiting). `estimated_wait_minutes` stays for code deployed before this migration; nothing
-- writes it any more, and a later migration drops it.
ALTER TABLE reservations ADD COLUMN estimated_start_at timestamptz;

GRANT UPDATE (estimated_start_at) ON reservations TO gpudev_lifecycle;
