from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from gpudev.repositories import GpuTypesRepository

CATALOGUE = Path(__file__).resolve().parents[2] / "migrations" / "0002_gpu_type_catalogue.sql"

# reference-behaviour.md §4.5: type -> (instance type, GPUs per node, CPUs, memory GB)
REFERENCE = {
    "t4": ("g4dn.12xlarge", 4, 48, 192),
    "t4-small": ("g4dn.2xlarge", 1, 8, 32),
    "l4": ("g6.12xlarge", 4, 48, 192),
    "a10g": ("g5.12xlarge", 4, 48, 192),
    "a100": ("p4d.24xlarge", 8, 96, 1152),
    "h100": ("p5.48xlarge", 8, 192, 2048),
    "h200": ("p5e.48xlarge", 8, 192, 2048),
    "b200": ("p6-b200.48xlarge", 8, 192, 2048),
    "cpu-x86": ("c7i.8xlarge", 0, 32, 64),
    "cpu-arm": ("c7g.8xlarge", 0, 32, 64),
}


def test_seeded_catalogue_matches_the_reference(db: psycopg.Connection[Any]):
    types = GpuTypesRepository(db).list_active()
    assert {
        t.gpu_type: (t.instance_type, t.max_gpus, t.cpus, t.memory_gb) for t in types
    } == REFERENCE
    assert all(t.max_per_node == t.max_gpus for t in types)
    assert [t.gpu_type for t in types][-2:] == ["cpu-arm", "cpu-x86"], "CPU types list last"


def test_lookup_is_case_insensitive(db: psycopg.Connection[Any]):
    found = GpuTypesRepository(db).get("H100")
    assert found is not None and found.gpu_type == "h100"
    assert GpuTypesRepository(db).get("v100") is None


def test_reseeding_keeps_availability_and_updates_static_configuration(
    db: psycopg.Connection[Any],
):
    db.execute(
        """UPDATE gpu_types SET total_cluster_gpus = 16, available_gpus = 12, max_reservable = 8,
                  full_nodes_available = 1, running_instances = 2, desired_capacity = 2,
                  max_per_node = 8, last_availability_update = now(),
                  last_availability_updated_by = 'updater:abc', description = 'stale'
           WHERE gpu_type = 'h100'"""
    )
    db.execute(CATALOGUE.read_text().encode())
    h100 = GpuTypesRepository(db).get("h100")
    assert h100 is not None
    assert (h100.total_cluster_gpus, h100.available_gpus, h100.max_reservable) == (16, 12, 8)
    assert (h100.full_nodes_available, h100.running_instances, h100.desired_capacity) == (1, 2, 2)
    assert h100.last_availability_updated_by == "updater:abc"
    assert h100.description == "NVIDIA H100 - Top-tier GPU for AI training and HPC"
