SELECT * FROM disks WHERE reservation_id = %(reservation_id)s
