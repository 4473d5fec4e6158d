-- Everything a submit checks, in one round trip and before anything is written: the
-- principal the caller's username is bound to (NULL: not bound yet), the active catalogue,
-- each row carrying the state of the caller's named disk (NULL when no disk is named, it
-- does not exist, or the username is bound to another principal), and the GitHub username
-- in the caller's settings (NULL when unset or bound to another principal). Always at least
-- one row.
-- It also takes the caller's submit lock for the rest of the transaction (class 7346002,
-- the username's hash): a second submit for the same username waits here, and the submit
-- statement that follows, with a snapshot taken after the lock, counts every live
-- reservation of the user, so two requests at once never both pass a limit. This
-- statement's own snapshot may predate the lock: a username bound by another principal's
-- first call while this one waited reads as not bound here, and the submit statement
-- refuses it (it writes nothing for a principal the username is not bound to).
WITH caller_lock AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(7346002, hashtext(%(user_id)s))
)
SELECT c.bound_principal, c.github_username AS settings_github_user, g.*, d.disk_state,
       d.disk_reservation_id
FROM (
    SELECT u.principal_arn AS bound_principal,
           CASE WHEN u.principal_arn = %(principal_arn)s THEN u.github_username END
               AS github_username
    FROM caller_lock
    LEFT JOIN users u ON u.username = %(user_id)s
) c
LEFT JOIN gpu_types g ON g.is_active
LEFT JOIN LATERAL (
    SELECT CASE
               WHEN disks.is_deleted THEN 'deleted'
               WHEN disks.in_use THEN 'in_use'
               ELSE 'available'
           END AS disk_state,
           disks.reservation_id AS disk_reservation_id
    FROM disks
    WHERE disks.user_id = %(user_id)s AND disks.disk_name = %(disk_name)s
      AND c.bound_principal = %(principal_arn)s
) d ON true
ORDER BY g.max_gpus = 0, g.gpu_type
