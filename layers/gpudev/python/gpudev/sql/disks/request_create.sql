-- A disk the user asked for: the row exists at once (name reserved), the volume is made
-- by the disk job. disks_user_disk_name_key refuses a second disk of the same name.
INSERT INTO disks (user_id, disk_name, size_gb, operation_id, operation_status)
VALUES (%(user_id)s, %(disk_name)s, %(size_gb)s, gen_random_uuid(), 'requested')
RETURNING *
