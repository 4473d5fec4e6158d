-- Capacity as the allocator sees it. Every node has one slot per allocatable GPU (three user
-- slots on a CPU node); an allocation holds slots. The primary key on (node, slot) means no
-- slot is ever held twice and the foreign key that only existing slots are held: the
-- database itself makes overbooking impossible, whatever the code does.
CREATE TABLE cluster_nodes (
    node_name   text PRIMARY KEY,
    gpu_type    text NOT NULL REFERENCES gpu_types (gpu_type),
    slots       integer NOT NULL CHECK (slots >= 0),
    schedulable boolean NOT NULL,
    node_ip     text,
    seen_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE node_slots (
    node_name text NOT NULL REFERENCES cluster_nodes (node_name) ON DELETE CASCADE,
    slot      integer NOT NULL CHECK (slot >= 0),
    CONSTRAINT node_slots_pkey PRIMARY KEY (node_name, slot)
);

CREATE TABLE allocations (
    node_name      text NOT NULL,
    slot           integer NOT NULL,
    reservation_id uuid NOT NULL REFERENCES reservations (reservation_id) ON DELETE CASCADE,
    rank           integer NOT NULL DEFAULT 0 CHECK (rank >= 0),  -- multinode: pod index
    granted_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT allocations_pkey PRIMARY KEY (node_name, slot),
    CONSTRAINT allocations_slot_fkey FOREIGN KEY (node_name, slot)
        REFERENCES node_slots (node_name, slot)
);
CREATE INDEX allocations_reservation_idx ON allocations (reservation_id);

ALTER TABLE reservations
    -- when the allocator granted capacity, and when the execution was told (NULL: resend)
    ADD COLUMN granted_at timestamptz,
    ADD COLUMN grant_signalled_at timestamptz,
    -- provisioning must be Running by then, or the reservation fails
    ADD COLUMN ready_deadline timestamptz,
    ADD COLUMN warning_text text;
CREATE INDEX reservations_waiting_idx ON reservations (gpu_type, created_at)
    WHERE status = 'queued' AND granted_at IS NULL;
