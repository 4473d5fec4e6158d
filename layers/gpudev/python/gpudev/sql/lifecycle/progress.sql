-- A preparing reservation's start-up step in its status line (the readiness check's words:
-- waiting for a node, pulling the image, attaching a disk, waiting for sshd, or why it is
-- stuck: an image pull error, a volume that cannot attach), written only when it changed,
-- with its timeline entry (kind startup) in the same statement; nothing once the
-- reservation moved on. A line that only counts on (`pulling image X (40 s)` after
-- `(30 s)`: cluster/pod_readiness.py) changes the status line but adds no timeline entry.
WITH before AS (
    SELECT current_detailed_status AS detail FROM reservations
    WHERE reservation_id = %(reservation_id)s
), changed AS (
    UPDATE reservations SET current_detailed_status = %(detail)s
    WHERE reservation_id = %(reservation_id)s AND status = 'preparing'
      AND current_detailed_status IS DISTINCT FROM %(detail)s
    RETURNING *
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT reservation_id, status, status, current_detailed_status, 'startup'
    FROM changed, before
    WHERE regexp_replace(changed.current_detailed_status, ' \(\d+ s\)$', '')
          IS DISTINCT FROM regexp_replace(before.detail, ' \(\d+ s\)$', '')
)
SELECT * FROM changed
