-- A snapshot of the held disk: started (is_backing_up), completed (its figures), or
-- dropped unfinished (no longer backing up), written as it happens, only by the holder. Idempotent: a completed snapshot counts once, when its
-- start time is newer than the last one recorded (a save polled again, or the sweeper
-- after the execution, records nothing twice), and last_snapshot_at never moves backwards.
UPDATE disks SET
    snapshot_count = snapshot_count + CASE
        WHEN %(completed)s AND last_snapshot_at IS DISTINCT FROM greatest(
            last_snapshot_at, %(started_at)s::timestamptz) THEN 1
        ELSE 0 END,
    last_snapshot_at = CASE
        WHEN %(completed)s THEN greatest(last_snapshot_at, %(started_at)s::timestamptz)
        ELSE last_snapshot_at END,
    size_gb = CASE WHEN %(completed)s THEN %(size_gb)s::int ELSE size_gb END,
    is_backing_up = %(backing_up)s
WHERE reservation_id = %(reservation_id)s
RETURNING *
