from __future__ import annotations

from typing import Any

import psycopg

from gpudev.db.rows import fetch_all
from gpudev.models import TypeAvailability


class CapacityRepository:
    """What users see of capacity: `gpu_types` availability joined with live reservations."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def by_type(self) -> list[TypeAvailability]:
        """Every active type with its queued and running demand, in one round trip."""
        return fetch_all(self._conn, "capacity/by_type", TypeAvailability)
