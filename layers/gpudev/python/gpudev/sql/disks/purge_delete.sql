-- The rows of purged disks (their snapshots are gone); re-checked, so a disk restored
-- meanwhile is never deleted.
DELETE FROM disks
WHERE disk_id = ANY(%(disk_ids)s) AND is_deleted AND delete_date <= %(today)s
RETURNING disk_id
