-- `reserve --docker` (issue #33, docs/images.md#docker-inside-the-dev-server): the pod has a
-- Docker daemon beside it (a privileged sidecar) and lives in the gpu-dev-docker namespace.
-- One node only, not with profiling: the API refuses the rest with a sentence first (and
-- refuses it all unless the operator allows Docker); the constraint is the last line of
-- defence.
ALTER TABLE reservations
    ADD COLUMN docker boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT reservations_docker_check
        CHECK (NOT docker OR (total_nodes = 1 AND NOT profiling));
