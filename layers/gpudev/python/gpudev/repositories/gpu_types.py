from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import GpuType


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
