-- Everything a submit checks, in one round trip and before anything is written: the
-- principal the caller's username is bound to (NULL: not bound yet), the active catalogue,
-- each row carrying the state of the caller's named disk (NULL when no disk is named, it
-- does not exist, or the username is bound to another principal), and the GitHub username
-- in the caller's settings (NULL when unset or bound to another principal). Always at least
-- one row.
-- The caller's request lock (users/request_lock.sql) is taken by a statement before this
-- one, so this snapshot, and the submit statement's, see what a request that held the lock
-- before (another submit, a rename or delete of the named disk) committed.
SELECT c.bound_principal, c.github_username AS settings_github_user, g.*, d.disk_state,
       d.disk_reservation_id
FROM (
    SELECT u.principal_arn AS bound_principal,
           CASE WHEN u.principal_arn = %(principal_arn)s THEN u.github_username END
               AS github_username
    FROM (SELECT) caller
    LEFT JOIN users u ON u.username = %(user_id)s
) c
LEFT JOIN gpu_types g ON g.is_active
LEFT JOIN LATERAL (
    SELECT CASE
               WHEN disks.is_deleted THEN 'deleted'
               WHEN disks.in_use THEN 'in_use'
               -- a clone whose copy has not completed (migrations/0042, disks/clone.py)
               WHEN disks.cloned_from IS NOT NULL AND disks.operation_status <> 'completed'
                   THEN 'cloning'
               ELSE 'available'
           END AS disk_state,
           disks.reservation_id AS disk_reservation_id
    FROM disks
    WHERE disks.user_id = %(user_id)s AND disks.disk_name = %(disk_name)s
      AND c.bound_principal = %(principal_arn)s
) d ON true
ORDER BY g.max_gpus = 0, g.gpu_type
