-- Every disk that is not deleted, for snapshot retention (disks/retention.py), with its
-- holder: a held disk's snapshots are never retired while it is held. Not locked: a take
-- after this read restores from the latest snapshot, which retention always keeps.
SELECT * FROM disks
WHERE NOT is_deleted
ORDER BY disk_id
