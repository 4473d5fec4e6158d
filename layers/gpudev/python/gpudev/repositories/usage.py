"""Usage reports and the operators' reads: one round trip each (SQL in `sql/usage/`, the
report's functions in migration 0018)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from gpudev.db.queries import query
from gpudev.db.rows import fetch_all
from gpudev.models import Reservation
from gpudev.usage_rows import GpuHours, GpuSecondsUsed, Outcome, QueueWait, Utilisation


@dataclass(frozen=True)
class UsageRows:
    gpu_hours: list[GpuHours]
    queue_waits: list[QueueWait]
    outcomes: list[Outcome]
    utilisation: list[Utilisation]
    gpu_seconds_used: list[GpuSecondsUsed] = field(default_factory=list)


class UsageRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def report(
        self, since: datetime, until: datetime, as_of: datetime, username: str | None
    ) -> UsageRows:
        """The window [since, until), live reservations counted up to `as_of`; one user's
        (no fleet utilisation) or everyone's (`username` None)."""
        params = {"since": since, "until": until, "as_of": as_of, "username": username}
        with self._conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(query("usage/report"), params).fetchone()
        assert row is not None
        return UsageRows(
            gpu_hours=[GpuHours.model_validate(r) for r in row["gpu_hours"]],
            queue_waits=[QueueWait.model_validate(r) for r in row["queue_waits"]],
            outcomes=[Outcome.model_validate(r) for r in row["outcomes"]],
            utilisation=[Utilisation.model_validate(r) for r in row["utilisation"]],
            gpu_seconds_used=[GpuSecondsUsed.model_validate(r) for r in row["gpu_seconds_used"]],
        )

    def live(self) -> list[Reservation]:
        """Every live reservation, oldest first."""
        return fetch_all(self._conn, "usage/live", Reservation)

    def find_any(self, prefix: str) -> list[Reservation]:
        """Anyone's reservations whose id is or starts with `prefix` (at most two)."""
        return fetch_all(self._conn, "usage/find_any", Reservation, {"prefix": prefix})
