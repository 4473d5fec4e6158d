-- Case 1: volumes in AWS with no row: a free disk (the holder is the lifecycle's, which
-- takes a disk only through its row; migration 0011).
INSERT INTO disks (
    user_id, disk_name, ebs_volume_id, size_gb, is_deleted, snapshot_count, is_backing_up,
    last_snapshot_at, operation_id, last_used
)
SELECT v.user_id, v.disk_name, v.volume_id, v.size_gb, false, v.snapshot_count, v.backing_up,
       v.last_snapshot, NULL, NULL
FROM unnest(
    %(user_ids)s::text[], %(disk_names)s::text[], %(volume_ids)s::text[], %(sizes)s::int[],
    %(snapshot_counts)s::int[], %(backing_up)s::boolean[], %(last_snapshots)s::timestamptz[]
) AS v (user_id, disk_name, volume_id, size_gb, snapshot_count, backing_up, last_snapshot)
