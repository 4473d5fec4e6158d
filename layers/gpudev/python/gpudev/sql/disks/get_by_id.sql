SELECT * FROM disks WHERE disk_id = %(disk_id)s
