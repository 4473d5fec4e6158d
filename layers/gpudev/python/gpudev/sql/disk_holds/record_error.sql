-- Why the holder could not save the disk yet (a failed snapshot); it still holds it.
UPDATE disks SET lifecycle_error = %(error)s
WHERE reservation_id = %(reservation_id)s
RETURNING *
