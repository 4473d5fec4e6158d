"""When a reservation's execution last applied a change or was woken for one (change_wakes,
migration 0028): what bounds its change wakes (lifecycle/wakes.py)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg

from gpudev.db.queries import query


class ChangeWakesRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def seconds_since(self, reservation_id: UUID) -> float | None:
        """Seconds since the last change wake or applied change; None: never."""
        row = self._conn.execute(
            query("lifecycle/change_wake_age"), {"reservation_id": reservation_id}
        ).fetchone()
        return None if row is None else float(row[0])

    def record(self, reservation_id: UUID) -> None:
        self._conn.execute(
            query("lifecycle/record_change_wake"), {"reservation_id": reservation_id}
        )
