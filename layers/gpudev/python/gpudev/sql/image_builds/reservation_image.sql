-- The build a reservation waited for succeeded: the reservation runs its image (written
-- once, while the reservation still waits).
UPDATE reservations SET
    image = %(image)s, image_digest = %(image_digest)s, image_pull = %(image_pull)s,
    current_detailed_status = 'waiting for capacity'
WHERE reservation_id = %(reservation_id)s AND image_build = %(context_hash)s
  AND image IS NULL AND status = 'queued'
RETURNING *
