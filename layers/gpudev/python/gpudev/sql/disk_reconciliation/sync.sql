-- Case 3: rows and volumes in both; only the fields AWS is the truth for. Never the holder
-- (reservation_id, and in_use derived from it): the lifecycle's (migration 0011).
-- The snapshot figures never move backwards here either: the plan read the row before this
-- write, and the lifecycle may have recorded a newer completed snapshot meanwhile. A listing
-- whose newest completed snapshot is older than the row's is behind: the row's figures stay.
UPDATE disks AS d SET
    ebs_volume_id    = v.volume_id,
    size_gb          = v.size_gb,
    snapshot_count   = CASE
        WHEN d.last_snapshot_at IS NOT NULL
            AND (v.last_snapshot IS NULL OR v.last_snapshot < d.last_snapshot_at)
        THEN d.snapshot_count ELSE v.snapshot_count END,
    is_backing_up    = v.backing_up,
    last_snapshot_at = CASE
        WHEN d.last_snapshot_at IS NOT NULL
            AND (v.last_snapshot IS NULL OR v.last_snapshot < d.last_snapshot_at)
        THEN d.last_snapshot_at ELSE v.last_snapshot END
FROM unnest(
    %(disk_ids)s::uuid[], %(volume_ids)s::text[], %(sizes)s::int[],
    %(snapshot_counts)s::int[], %(backing_up)s::boolean[], %(last_snapshots)s::timestamptz[]
) AS v (disk_id, volume_id, size_gb, snapshot_count, backing_up, last_snapshot)
WHERE d.disk_id = v.disk_id
