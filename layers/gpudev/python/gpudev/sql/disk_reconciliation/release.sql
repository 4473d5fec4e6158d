-- Case 2, active rows whose volume is gone: not in use, no reservation; all else kept.
UPDATE disks SET in_use = false, reservation_id = NULL
WHERE disk_id = ANY (%(disk_ids)s::uuid[]) AND NOT is_deleted
