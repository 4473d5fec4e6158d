-- Persistent disks, the remaining pieces (issue #14).
--
-- When the listing of a disk's contents (`content_listing`, 0011) was taken: the pod wrote
-- it as it stopped (cluster/home_listing.py) and the lifecycle recorded it. NULL: never.
ALTER TABLE disks ADD COLUMN content_listed_at timestamptz;
GRANT UPDATE (content_listed_at) ON disks TO gpudev_lifecycle;

-- The daily purge gets its own group role: it deletes disk rows, which the reconcilers
-- (the availability updater, the EBS disk reconciler) never need, so 0012's DELETE on
-- disks moves from them to it. It reads the disks due, takes its run lock and records its
-- runs (gpudev/disks/purge.py); nothing else.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gpudev_purge') THEN
        CREATE ROLE gpudev_purge NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gpudev_purge_login') THEN
        CREATE ROLE gpudev_purge_login LOGIN;
    END IF;
    GRANT gpudev_purge TO gpudev_purge_login;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rds_iam') THEN
        GRANT rds_iam TO gpudev_purge_login;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA public TO gpudev_purge;
GRANT SELECT, DELETE ON disks TO gpudev_purge;
-- purge_due locks the rows it reads (FOR UPDATE), which takes UPDATE on one column at least:
-- last_updated, which it never writes.
GRANT UPDATE (last_updated) ON disks TO gpudev_purge;
GRANT SELECT, INSERT ON reconciler_runs TO gpudev_purge;
GRANT UPDATE (finished_at, outcome, statistics, error) ON reconciler_runs TO gpudev_purge;
REVOKE DELETE ON disks FROM gpudev_reconcilers;
