-- The wait a new request of each GPU type would get (issue #16 item 3): the allocator's
-- ETA, in clock minutes, for a one-slot request put at the back of the type's queue at its
-- last pass (0: it would start now; NULL: no ETA, no node of the type). `avail` and
-- `status` show it, instead of "unknown" whenever something is queued.
ALTER TABLE gpu_types ADD COLUMN estimated_wait_minutes integer
    CONSTRAINT gpu_types_estimated_wait_minutes_check CHECK (estimated_wait_minutes >= 0);

GRANT UPDATE (estimated_wait_minutes) ON gpu_types TO gpudev_lifecycle;
