from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import Availability, GpuType


class GpuTypesRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def list_active(self) -> list[GpuType]:
        with self._conn.cursor(row_factory=class_row(GpuType)) as cur:
            return cur.execute(query("gpu_types/list_active")).fetchall()

    def get(self, gpu_type: str) -> GpuType | None:
        """Case-insensitive: users type H100 as often as h100."""
        with self._conn.cursor(row_factory=class_row(GpuType)) as cur:
            return cur.execute(query("gpu_types/get"), {"gpu_type": gpu_type.lower()}).fetchone()

    def update_availability(self, results: Sequence[Availability], updated_by: str) -> None:
        """Every type's availability columns in one statement (the static configuration
        belongs to the catalogue migrations)."""
        self._conn.execute(
            query("gpu_types/update_availability"),
            {
                "gpu_types": [r.gpu_type for r in results],
                "totals": [r.total_cluster_gpus for r in results],
                "available": [r.available_gpus for r in results],
                "max_reservable": [r.max_reservable for r in results],
                "full_nodes": [r.full_nodes_available for r in results],
                "running": [r.running_instances for r in results],
                "desired": [r.desired_capacity for r in results],
                "max_per_node": [r.max_per_node for r in results],
                "updated_by": updated_by,
            },
        )
