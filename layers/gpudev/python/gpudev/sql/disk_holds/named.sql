SELECT * FROM disks WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s
