-- The holder lets the disk go, once its snapshot completed and its volume is deleted: one
-- statement, only by the reservation that holds it. The content listing stays (it
-- describes the snapshot just made).
UPDATE disks SET
    reservation_id = NULL,
    lifecycle_error = NULL,
    held_volume_id = NULL
WHERE reservation_id = %(reservation_id)s
RETURNING *
