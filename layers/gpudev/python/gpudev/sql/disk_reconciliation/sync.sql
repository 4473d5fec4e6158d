-- Case 3: rows and volumes in both; only the fields AWS is the truth for. Never the holder
-- (reservation_id, and in_use derived from it): the lifecycle's (migration 0011).
UPDATE disks AS d SET
    ebs_volume_id    = v.volume_id,
    size_gb          = v.size_gb,
    snapshot_count   = v.snapshot_count,
    is_backing_up    = v.backing_up,
    last_snapshot_at = v.last_snapshot
FROM unnest(
    %(disk_ids)s::uuid[], %(volume_ids)s::text[], %(sizes)s::int[],
    %(snapshot_counts)s::int[], %(backing_up)s::boolean[], %(last_snapshots)s::timestamptz[]
) AS v (disk_id, volume_id, size_gb, snapshot_count, backing_up, last_snapshot)
WHERE d.disk_id = v.disk_id
