-- The GPU catalogue (reference §4.5). Re-running this upsert (or a later catalogue
-- migration written the same way) updates static configuration only: the availability
-- columns belong to the availability updater and are never overwritten here.
INSERT INTO gpu_types (gpu_type, instance_type, max_gpus, cpus, memory_gb, max_per_node, description)
VALUES
    ('t4',       'g4dn.12xlarge',    4,  48,  192, 4, 'NVIDIA T4 - Entry-level GPU for inference and light training'),
    ('t4-small', 'g4dn.2xlarge',     1,   8,   32, 1, 'NVIDIA T4 - Small instance for testing'),
    ('l4',       'g6.12xlarge',      4,  48,  192, 4, 'NVIDIA L4 - Efficient GPU for inference and training'),
    ('a10g',     'g5.12xlarge',      4,  48,  192, 4, 'NVIDIA A10G - Mid-range GPU for training and inference'),
    ('a100',     'p4d.24xlarge',     8,  96, 1152, 8, 'NVIDIA A100 - High-performance GPU for large-scale training'),
    ('h100',     'p5.48xlarge',      8, 192, 2048, 8, 'NVIDIA H100 - Top-tier GPU for AI training and HPC'),
    ('h200',     'p5e.48xlarge',     8, 192, 2048, 8, 'NVIDIA H200 - Latest generation with increased memory'),
    ('b200',     'p6-b200.48xlarge', 8, 192, 2048, 8, 'NVIDIA B200 - Next-generation Blackwell architecture'),
    ('cpu-x86',  'c7i.8xlarge',      0,  32,   64, 0, 'CPU-only instance (x86, Intel)'),
    ('cpu-arm',  'c7g.8xlarge',      0,  32,   64, 0, 'CPU-only instance (ARM, Graviton)')
ON CONFLICT (gpu_type) DO UPDATE SET
    instance_type = EXCLUDED.instance_type,
    max_gpus      = EXCLUDED.max_gpus,
    cpus          = EXCLUDED.cpus,
    memory_gb     = EXCLUDED.memory_gb,
    description   = EXCLUDED.description;
