-- Images built from a Dockerfile (issue #33, `reserve --dockerfile`, `gpu-dev image build`;
-- docs/images.md#built-images). A build is named by its context hash: the sha256 of the
-- context tar the CLI uploaded, which is also the image's tag in the team repository. One
-- build per hash, whoever asked: the same context again reuses it.
--
-- status: building (a CodeBuild build started, or being started: build_id NULL until
-- StartBuild answers), succeeded (image_digest set), failed (log_tail: the build log's end).
CREATE TABLE image_builds (
    context_hash text PRIMARY KEY CONSTRAINT image_builds_context_hash_check
        CHECK (context_hash ~ '^[a-f0-9]{64}$'),
    status text NOT NULL DEFAULT 'building' CONSTRAINT image_builds_status_check
        CHECK (status IN ('building', 'succeeded', 'failed')),
    build_id text,
    phase text,  -- CodeBuild's current phase, or "step 5/12" from the log
    image_digest text CONSTRAINT image_builds_image_digest_check
        CHECK (image_digest ~ '^sha256:[a-f0-9]{64}$'),
    size_bytes bigint,
    log_tail text,
    claimed_at timestamptz NOT NULL DEFAULT now(),  -- when StartBuild was (last) attempted
    finished_at timestamptz,
    CONSTRAINT image_builds_outcome_check CHECK (
        (status = 'succeeded') = (image_digest IS NOT NULL)
        AND (status = 'building') = (finished_at IS NULL)
    )
);

-- Who uploaded or built which context: `gpu-dev image list` shows a user's own.
CREATE TABLE image_build_owners (
    context_hash text NOT NULL,
    user_id text NOT NULL REFERENCES users (username),
    first_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, context_hash)
);

-- The build a reservation waits for: its image columns are written when the build succeeds
-- (they stay NULL until then, as for the default image).
ALTER TABLE reservations
    ADD COLUMN image_build text CONSTRAINT reservations_image_build_check
        CHECK (image_build ~ '^[a-f0-9]{64}$');

GRANT SELECT, INSERT, UPDATE ON image_builds TO gpudev_api, gpudev_lifecycle;
GRANT SELECT, INSERT ON image_build_owners TO gpudev_api;
GRANT SELECT ON image_build_owners TO gpudev_lifecycle;
GRANT UPDATE (image, image_digest, image_pull) ON reservations TO gpudev_lifecycle;
