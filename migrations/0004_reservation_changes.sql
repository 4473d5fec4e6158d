-- Changes to a live reservation (extend, add a user, Jupyter on/off) are desired state:
-- the API writes them on the row and bumps change_generation in the same statement; the
-- reservation's execution applies them to the pod's ConfigMap and Secret and records the
-- generation it applied. A wake-up that is lost is therefore never a change that is lost.
ALTER TABLE reservations
    ADD COLUMN change_generation integer NOT NULL DEFAULT 0,
    ADD COLUMN applied_generation integer NOT NULL DEFAULT 0,
    -- duration_hours is the total since launch: 24 h per request, 48 h with extensions.
    ADD CONSTRAINT reservations_total_hours_check CHECK (duration_hours <= 48),
    ADD CONSTRAINT reservations_applied_generation_check
        CHECK (applied_generation <= change_generation);

-- Disk operations requested through the API (create, delete, rename) are jobs too.
ALTER TABLE disks
    ADD CONSTRAINT disks_operation_status_check
        CHECK (operation_status IN ('requested', 'running', 'completed', 'failed'));
