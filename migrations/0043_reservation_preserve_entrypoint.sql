-- `reserve --preserve-entrypoint` (issue #33, docs/images.md): the pod runs its image's own
-- entrypoint and command, with no startup script and no SSH. Only with an image asked for,
-- without Jupyter, on one node: the API refuses the rest with a sentence first; the
-- constraint is the last line of defence.
ALTER TABLE reservations
    ADD COLUMN preserve_entrypoint boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT reservations_preserve_entrypoint_check
        CHECK (NOT preserve_entrypoint
               OR (image IS NOT NULL AND NOT jupyter_enabled AND total_nodes = 1));
