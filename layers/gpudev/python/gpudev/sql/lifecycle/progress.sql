-- Why a preparing reservation is not ready yet, in its status line (the readiness check's
-- words: unschedulable, image pull, a volume that cannot attach), written only when it
-- changed; nothing once the reservation moved on.
UPDATE reservations SET current_detailed_status = %(detail)s
WHERE reservation_id = %(reservation_id)s AND status = 'preparing'
  AND current_detailed_status IS DISTINCT FROM %(detail)s
RETURNING *
