-- The image pre-puller (issue #33 item 5; docs/images.md, "Pre-pulled images"): the
-- availability updater reads the images reservations asked for in the last days
-- (sql/prepuller/most_used_images.sql). A partial index holds only reservations with an
-- image of their own (the default image is NULL and always pre-pulled), so the read touches
-- the recent ones with an image and nothing else.
CREATE INDEX reservations_image_pull_recent_idx
    ON reservations (created_at, image_pull) WHERE image_pull IS NOT NULL;
GRANT SELECT (created_at, image_pull, user_id) ON reservations TO gpudev_reconcilers;
