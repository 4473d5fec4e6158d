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

-- A name a create or rename takes must not be the name another disk's EBS tags still carry
-- (`tagged_name`, 0012): that disk's snapshots would be found as the new one's. Checked in
-- the statement itself this could race (both statements' snapshots predate the other's
-- commit), so a trigger serialises the user's name changes on a transaction-scoped lock
-- and checks with a fresh snapshot, taken after the other change committed. It fires for
-- the API's requests only (operation_status 'requested'); the reconciler's imports do not
-- take a lock per row.
CREATE FUNCTION disks_claim_name() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    renamed text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('gpudev.disk_names/' || NEW.user_id, 0));
    SELECT other.disk_name INTO renamed FROM disks other
    WHERE other.user_id = NEW.user_id AND other.tagged_name = NEW.disk_name
      AND other.disk_id <> NEW.disk_id
    LIMIT 1;
    IF renamed IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'unique_violation',
            CONSTRAINT = 'disks_name_still_tagged',
            MESSAGE = format(
                'the name %L is still on the snapshots of your disk %L, renamed from it; wait'
                ' until its rename is applied (`gpu-dev disk show %s`), or choose another name',
                NEW.disk_name, renamed, renamed);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER disks_claim_name BEFORE INSERT OR UPDATE OF disk_name ON disks
    FOR EACH ROW WHEN (NEW.operation_status = 'requested') EXECUTE FUNCTION disks_claim_name();

-- The live reservation naming a disk (it holds the disk until it ends), if any: what makes
-- a rename or delete refused, and what the refusal names.
CREATE FUNCTION disk_live_holder(owner text, disk text) RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT r.reservation_id FROM reservations r
    WHERE r.user_id = disk_live_holder.owner AND r.disk_name = disk_live_holder.disk
      AND status IN ('pending', 'queued', 'preparing', 'active')
    ORDER BY created_at
    LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION disk_live_holder(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION disk_live_holder(text, text) TO gpudev_api;
