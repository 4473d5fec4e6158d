SELECT disk_id, user_id, disk_name, ebs_volume_id, size_gb, in_use, reservation_id, is_deleted,
       snapshot_count, is_backing_up, last_snapshot_at, held_volume_id
FROM disks
ORDER BY created_at, disk_id
