-- The deleted disks whose date has come (disks_delete_date_idx), locked until the purge
-- commits: a restore waits, then finds the date passed.
SELECT * FROM disks
WHERE is_deleted AND delete_date <= %(today)s
ORDER BY delete_date, disk_id
FOR UPDATE
