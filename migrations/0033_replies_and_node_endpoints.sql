-- Replies that match what happened, and every node of a multinode reservation reachable
-- (issue #28 items 5 and 6; docs/decisions.md, 2026-11-27 "Replies say when a change
-- applies; an SSH endpoint per node").
--
-- keyless_users: the added GitHub users for whom GitHub listed no public keys when the
-- lifecycle last fetched them (provision and every checkpoint): they cannot log in until
-- they add one, and `show` says so.
-- ssh_nodes: one SSH endpoint per node, by rank ({rank, node_ip, node_port,
-- node_address_kind}), written at activation; node_ip/node_port stay node 0's.
ALTER TABLE reservations
    ADD COLUMN keyless_users text[] NOT NULL DEFAULT '{}',
    ADD COLUMN ssh_nodes jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT reservations_ssh_nodes_check CHECK (jsonb_typeof(ssh_nodes) = 'array');
GRANT UPDATE (keyless_users, ssh_nodes) ON reservations TO gpudev_lifecycle;
