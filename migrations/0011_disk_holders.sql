-- A named disk has at most one holder, and who holds it is one column the lifecycle owns.
--
-- `reservation_id` is the holder: set by one statement when a granted reservation takes the
-- disk (disk_holds/take.sql, only when it is NULL), cleared by one statement once the disk's
-- snapshot completed and its volume is deleted (disk_holds/free.sql). One column means two
-- holders are impossible; the partial unique index below means one reservation holds one
-- disk at most. `in_use` is no longer written by anyone: it is derived from the holder, so
-- the two cannot disagree (the EBS reconciler used to set it from attachments, which in a
-- snapshot-first lifecycle come and go while the disk stays held).
--
-- Ownership (docs/architecture.md, "Persistent disks"): the lifecycle owns reservation_id
-- (hence in_use), last_used, content_listing, lifecycle_error and held_volume_id; the EBS
-- disk reconciler owns ebs_volume_id, size_gb and the snapshot summary (snapshot_count, is_backing_up,
-- last_snapshot_at), and inserts rows for volumes it has none for, never held.
UPDATE disks SET reservation_id = NULL WHERE NOT in_use;
ALTER TABLE disks DROP COLUMN in_use;
ALTER TABLE disks
    ADD COLUMN in_use boolean GENERATED ALWAYS AS (reservation_id IS NOT NULL) STORED,
    -- a listing of the disk's contents taken when it was last saved (`disk list-content`);
    -- reserved for the lifecycle, which does not record one yet
    ADD COLUMN content_listing text,
    -- why the lifecycle could not save or free the disk (a failed snapshot), until it does
    ADD COLUMN lifecycle_error text,
    -- the volume made for the holder (EC2 ClientToken = its reservation id), which saving
    -- and freeing act on; NULL when nobody holds the disk
    ADD COLUMN held_volume_id text;
DROP INDEX disks_reservation_idx;
CREATE UNIQUE INDEX disks_reservation_id_key ON disks (reservation_id)
    WHERE reservation_id IS NOT NULL;

-- The lifecycle takes, saves and frees disks; the reconciler no longer writes the holder.
GRANT SELECT ON disks TO gpudev_lifecycle;
GRANT UPDATE (reservation_id, last_used, content_listing, lifecycle_error, held_volume_id)
    ON disks TO gpudev_lifecycle;
REVOKE UPDATE (reservation_id) ON disks FROM gpudev_reconcilers;
