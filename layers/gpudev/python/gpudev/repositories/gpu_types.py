from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from gpudev.db.queries import query
from gpudev.db.rows import column_arrays, fetch_all, fetch_one
from gpudev.models import Availability, GpuType, TypeCapacity


class GpuTypesRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def list_active(self) -> list[GpuType]:
        return fetch_all(self._conn, "gpu_types/list_active", GpuType)

    def get(self, gpu_type: str) -> GpuType | None:
        """Case-insensitive: users type H100 as often as h100."""
        return fetch_one(self._conn, "gpu_types/get", GpuType, {"gpu_type": gpu_type.lower()})

    def update_availability(self, results: Sequence[Availability], updated_by: str) -> None:
        """Every type's availability columns in one statement (the static configuration
        belongs to the catalogue migrations)."""
        self._conn.execute(
            query("gpu_types/update_availability"),
            {
                **column_arrays(results, "gpu_type", *TypeCapacity.model_fields),
                "updated_by": updated_by,
            },
        )
