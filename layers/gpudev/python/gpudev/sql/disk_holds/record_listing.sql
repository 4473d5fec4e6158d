-- The listing of the disk's contents its pod wrote as it stopped (cluster/home_listing.py):
-- only by the holder, before it saves and frees the disk.
UPDATE disks SET content_listing = %(listing)s, content_listed_at = now()
WHERE reservation_id = %(reservation_id)s
RETURNING *
