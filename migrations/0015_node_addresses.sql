-- Where to connect (issue #15 item 4): a node's external address (its ExternalIP, else
-- ExternalDNS; none in a private subnet) next to its internal one, and for a reservation
-- which of the two its `node_ip`/`ssh_command` use, so the CLI can say when the address is
-- only reachable from inside the VPC.
ALTER TABLE cluster_nodes ADD COLUMN external_address text;
ALTER TABLE reservations ADD COLUMN node_address_kind text
    CONSTRAINT reservations_node_address_kind_check
    CHECK (node_address_kind IN ('external', 'internal'));

GRANT UPDATE (node_address_kind) ON reservations TO gpudev_lifecycle;
