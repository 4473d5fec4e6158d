-- The volume made for the holder (created with the reservation id as ClientToken): every
-- later step acts on it. Only by the holder; cleared when it frees the disk.
UPDATE disks SET held_volume_id = %(volume_id)s
WHERE reservation_id = %(reservation_id)s
RETURNING *
