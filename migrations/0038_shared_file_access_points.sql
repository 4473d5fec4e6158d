-- Each user's access point on the deployment's EFS file system (issue #34): its own root
-- directory, /users/<user key>, owned by the pod's `dev` uid/gid. One row per user and file
-- system, claimed before the access point is made (INSERT ... ON CONFLICT DO NOTHING, then
-- the row locked while the access point is created): two first reservations at once make
-- one access point. The client token is deterministic, so a retry after a crash between
-- CreateAccessPoint and the UPDATE gets the same access point back from EFS. The token is
-- a function of the primary key, so it needs no unique index of its own (a second unique
-- index, not the ON CONFLICT arbiter, deadlocks concurrent first inserts).
CREATE TABLE shared_file_access_points (
    user_id text NOT NULL,
    file_system_id text NOT NULL,
    client_token text NOT NULL,
    access_point_id text,
    created_at timestamptz NOT NULL DEFAULT now(),
    ready_at timestamptz,
    CONSTRAINT shared_file_access_points_pkey PRIMARY KEY (user_id, file_system_id),
    CONSTRAINT shared_file_access_points_access_point_key UNIQUE (access_point_id),
    CONSTRAINT shared_file_access_points_ready_check
        CHECK ((access_point_id IS NULL) = (ready_at IS NULL))
);

GRANT SELECT, INSERT, UPDATE ON shared_file_access_points TO gpudev_lifecycle;
GRANT SELECT ON shared_file_access_points TO gpudev_api;
