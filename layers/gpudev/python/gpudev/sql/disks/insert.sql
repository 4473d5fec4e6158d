INSERT INTO disks (user_id, disk_name, size_gb, ebs_volume_id)
VALUES (%(user_id)s, %(disk_name)s, %(size_gb)s, %(ebs_volume_id)s)
RETURNING *
