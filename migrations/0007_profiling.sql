-- A reservation may ask for profiling (perf counters, Nsight Systems/Compute, `perf`): its
-- pod then gets CAP_SYS_ADMIN and runs in the profiling namespace, the only one whose Pod
-- Security level allows that capability. Off unless asked for.
ALTER TABLE reservations ADD COLUMN profiling boolean NOT NULL DEFAULT false;
-- The lifecycle records the namespace a reservation's objects live in (it depends on this).
GRANT UPDATE (namespace) ON reservations TO gpudev_lifecycle;
