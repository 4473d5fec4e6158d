-- Everything a submit checks, in one round trip: the active catalogue, each row carrying
-- the state of the caller's named disk (NULL when no disk is named or it does not exist).
-- It also takes the caller's submit lock for the rest of the transaction (class 7346002,
-- the username's hash): a second submit by the same user waits here, and the submit
-- statement that follows, with a snapshot taken after the lock, counts every live
-- reservation of the user, so two requests at once never both pass a limit.
WITH caller_lock AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(7346002, hashtext(%(user_id)s))
)
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
WHERE EXISTS (SELECT FROM caller_lock) AND g.is_active
ORDER BY g.max_gpus = 0, g.gpu_type
