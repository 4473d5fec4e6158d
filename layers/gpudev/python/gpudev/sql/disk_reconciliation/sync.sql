-- Case 3: rows and volumes in both; only the fields AWS is the truth for.
UPDATE disks AS d SET
    ebs_volume_id    = v.volume_id,
    size_gb          = v.size_gb,
    in_use           = v.in_use,
    reservation_id   = CASE
        WHEN NOT v.in_use THEN NULL
        ELSE coalesce((SELECT r.reservation_id FROM reservations r
                       WHERE r.reservation_id = v.reservation_id), d.reservation_id)
    END,
    snapshot_count   = v.snapshot_count,
    is_backing_up    = v.backing_up,
    last_snapshot_at = v.last_snapshot
FROM unnest(
    %(disk_ids)s::uuid[], %(volume_ids)s::text[], %(sizes)s::int[], %(in_use)s::boolean[],
    %(reservation_ids)s::uuid[], %(snapshot_counts)s::int[], %(backing_up)s::boolean[],
    %(last_snapshots)s::timestamptz[]
) AS v (disk_id, volume_id, size_gb, in_use, reservation_id, snapshot_count, backing_up,
        last_snapshot)
WHERE d.disk_id = v.disk_id
