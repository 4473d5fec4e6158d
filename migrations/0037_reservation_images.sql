-- The image a reservation asked for (issue #33, `reserve --image`), resolved by the API at
-- submit: the reference as written and normalized (`image`), its digest (`image_digest`),
-- and what the pod runs (`image_pull`: the account's ECR repository, or the pull-through
-- cache's, at that digest). All NULL: the deployment's default image (`podImage`).
ALTER TABLE reservations
    ADD COLUMN image text,
    ADD COLUMN image_digest text,
    ADD COLUMN image_pull text,
    ADD CONSTRAINT reservations_image_digest_check
        CHECK (image_digest ~ '^sha256:[a-f0-9]{64}$'),
    ADD CONSTRAINT reservations_image_complete_check
        CHECK ((image IS NULL) = (image_digest IS NULL)
               AND (image_digest IS NULL) = (image_pull IS NULL)),
    ADD CONSTRAINT reservations_image_pull_check
        CHECK (image_pull IS NULL OR image_pull LIKE '%@' || image_digest);
