-- The volume the holder's disk is on (made for it with the reservation id as ClientToken,
-- or the disk's existing volume it attached): every later step acts on it. Only by the
-- holder; cleared when it frees the disk. The reservation keeps it (`gpu-dev show`).
WITH reservation AS (
    UPDATE reservations SET ebs_volume_id = %(volume_id)s
    WHERE reservation_id = %(reservation_id)s
      AND EXISTS (SELECT FROM disks WHERE reservation_id = %(reservation_id)s)
)
UPDATE disks SET held_volume_id = %(volume_id)s
WHERE reservation_id = %(reservation_id)s
RETURNING *
