-- The holder lets the disk go, once its snapshot completed and its volume is deleted: one
-- statement, only by the reservation that holds it. The listing is kept when none is given.
UPDATE disks SET
    reservation_id = NULL,
    lifecycle_error = NULL,
    held_volume_id = NULL,
    content_listing = coalesce(%(content_listing)s, content_listing)
WHERE reservation_id = %(reservation_id)s
RETURNING *
