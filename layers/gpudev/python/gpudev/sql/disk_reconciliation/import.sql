-- Case 1: volumes in AWS with no row. A reservation tag that names no reservation we know
-- is dropped rather than failing the import.
INSERT INTO disks (
    user_id, disk_name, ebs_volume_id, size_gb, in_use, reservation_id, is_deleted,
    snapshot_count, is_backing_up, last_snapshot_at, operation_id, last_used
)
SELECT v.user_id, v.disk_name, v.volume_id, v.size_gb, v.in_use, r.reservation_id, false,
       v.snapshot_count, v.backing_up, v.last_snapshot, NULL, NULL
FROM unnest(
    %(user_ids)s::text[], %(disk_names)s::text[], %(volume_ids)s::text[], %(sizes)s::int[],
    %(in_use)s::boolean[], %(reservation_ids)s::uuid[], %(snapshot_counts)s::int[],
    %(backing_up)s::boolean[], %(last_snapshots)s::timestamptz[]
) AS v (user_id, disk_name, volume_id, size_gb, in_use, reservation_id, snapshot_count,
        backing_up, last_snapshot)
LEFT JOIN reservations r ON r.reservation_id = v.reservation_id
