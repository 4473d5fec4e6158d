from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import TypeAvailability


class CapacityRepository:
    """What users see of capacity: `gpu_types` availability joined with live reservations."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def by_type(self) -> list[TypeAvailability]:
        """Every active type with its queued and running demand, in one round trip."""
        with self._conn.cursor(row_factory=class_row(TypeAvailability)) as cur:
            return cur.execute(query("capacity/by_type")).fetchall()
