SELECT * FROM disks
WHERE user_id = %(user_id)s AND (%(include_deleted)s OR NOT is_deleted)
ORDER BY created_at DESC, disk_name
