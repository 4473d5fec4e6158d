-- Multinode at fabric speed (issue #37; docs/multinode.md, docs/decisions.md 2026-11-27
-- "Multinode at fabric speed").
--
-- gpu_types.efa_interfaces: how many EFA interfaces (the device plugin's
-- vpc.amazonaws.com/efa) a node of the type has; a whole-node pod of a multinode reservation
-- requests all of them. 0: not EFA-capable (its NCCL traffic stays on TCP). From EC2's
-- instance-type table (describe-instance-types NetworkInfo.EfaInfo.MaximumEfaInterfaces).
ALTER TABLE gpu_types ADD COLUMN efa_interfaces int NOT NULL DEFAULT 0
    CONSTRAINT gpu_types_efa_interfaces_check CHECK (efa_interfaces >= 0);
UPDATE gpu_types SET efa_interfaces = CASE instance_type
    WHEN 'p5.48xlarge' THEN 32
    WHEN 'p5e.48xlarge' THEN 32
    WHEN 'p5en.48xlarge' THEN 16
    WHEN 'p4d.24xlarge' THEN 4
    WHEN 'p4de.24xlarge' THEN 4
    WHEN 'p6-b200.48xlarge' THEN 8
    ELSE 0 END;

-- cluster_nodes.fabric: the node's zone and placement group
-- (`<topology.kubernetes.io/zone>/<gpu-dev/placement-group>`, cluster/vocabulary.py
-- fabric_of). The allocator grants a multinode reservation nodes of one fabric only.
ALTER TABLE cluster_nodes ADD COLUMN fabric text NOT NULL DEFAULT '';
