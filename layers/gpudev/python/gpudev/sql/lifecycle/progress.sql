-- A preparing reservation's start-up step in its status line (the readiness check's words:
-- waiting for a node, pulling the image, attaching a disk, waiting for sshd, or why it is
-- stuck: an image pull error, a volume that cannot attach), written only when it changed,
-- with its timeline entry (kind startup) in the same statement; nothing once the
-- reservation moved on.
WITH changed AS (
    UPDATE reservations SET current_detailed_status = %(detail)s
    WHERE reservation_id = %(reservation_id)s AND status = 'preparing'
      AND current_detailed_status IS DISTINCT FROM %(detail)s
    RETURNING *
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT reservation_id, status, status, current_detailed_status, 'startup' FROM changed
)
SELECT * FROM changed
