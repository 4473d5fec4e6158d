-- Disks still held by a reservation that has ended: its execution saves and frees them
-- after tear down, unless that execution died (stopped, `Disk not saved`, `TearDownFailed`),
-- which the sweeper confirms before it saves them itself (sweeper/disks.py). Read after the
-- run's ends, so a reservation the run just ended is among them. disks_reservation_id_key
-- makes this a scan of the held disks only.
SELECT d.reservation_id, r.execution_arn
FROM disks AS d
JOIN reservations AS r ON r.reservation_id = d.reservation_id
WHERE d.reservation_id IS NOT NULL
  AND r.status NOT IN ('pending', 'queued', 'preparing', 'active')
ORDER BY d.reservation_id
