-- Everything a submit checks, in one round trip: the active catalogue, each row carrying
-- the state of the caller's named disk (NULL when no disk is named or it does not exist).
SELECT g.*, d.disk_state, d.disk_reservation_id
FROM gpu_types g
LEFT JOIN LATERAL (
    SELECT CASE
               WHEN disks.is_deleted THEN 'deleted'
               WHEN disks.in_use THEN 'in_use'
               ELSE 'available'
           END AS disk_state,
           disks.reservation_id AS disk_reservation_id
    FROM disks
    WHERE disks.user_id = %(user_id)s AND disks.disk_name = %(disk_name)s
) d ON true
WHERE g.is_active
ORDER BY g.max_gpus = 0, g.gpu_type
