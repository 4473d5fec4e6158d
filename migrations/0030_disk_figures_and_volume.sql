-- Disk figures written when they change, and the volume a reservation mounts (issue #28).
--
-- The lifecycle records each completed snapshot of the disk it holds on the disk's row as it
-- happens (gpudev/sql/disk_holds/record_snapshot.sql: snapshot_count, last_snapshot_at,
-- size_gb, is_backing_up), so `disk list` and `disk show` are current between
-- reservations, when the disk has no volume for the EBS reconciler to sync. The reconciler
-- stays the source of truth for what EBS holds but never moves the figures backwards
-- (gpudev/disks/plan.py).
GRANT UPDATE (snapshot_count, last_snapshot_at, size_gb, is_backing_up) ON disks
    TO gpudev_lifecycle;

-- The volume the reservation's disk is on (made for it, or the disk's existing volume it
-- attached), recorded with the disk's held_volume_id (disk_holds/record_volume.sql) and
-- shown by `gpu-dev show`. The column exists since 0001; nothing wrote it before.
GRANT UPDATE (ebs_volume_id) ON reservations TO gpudev_lifecycle;
