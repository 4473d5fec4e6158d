"""Usage reports and the operators' reads: one round trip each (SQL in `sql/usage/`, the
report's functions in migration 0018)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from pydantic import BaseModel

from gpudev.db.queries import query
from gpudev.db.rows import fetch_all
from gpudev.models import Reservation


class GpuHours(BaseModel):
    """GPU-hours one user held of one type on one UTC day."""

    username: str
    gpu_type: str
    day: date
    gpu_hours: float
    reservations: int


class QueueWait(BaseModel):
    """Submission to grant, in clock minutes, for one type's reservations submitted in the
    window; the percentiles are over the granted ones (None when none was granted)."""

    gpu_type: str
    granted: int
    still_waiting: int
    never_granted: int
    p50_minutes: float | None
    p90_minutes: float | None
    max_minutes: float | None


class Outcome(BaseModel):
    """Reservations that ended in the window with this status and reason."""

    outcome: str
    reason: str | None
    while_queued: bool  # ended before any grant: held no GPU
    reservations: int


class Utilisation(BaseModel):
    """One type's GPU-hours held against its GPU-hours of capacity (None: no capacity)."""

    gpu_type: str
    held_gpu_hours: float
    capacity_gpu_hours: float
    utilisation: float | None


@dataclass(frozen=True)
class UsageRows:
    gpu_hours: list[GpuHours]
    queue_waits: list[QueueWait]
    outcomes: list[Outcome]
    utilisation: list[Utilisation]


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
        )

    def live(self) -> list[Reservation]:
        """Every live reservation, oldest first."""
        return fetch_all(self._conn, "usage/live", Reservation)

    def find_any(self, prefix: str) -> list[Reservation]:
        """Anyone's reservations whose id is or starts with `prefix` (at most two)."""
        return fetch_all(self._conn, "usage/find_any", Reservation, {"prefix": prefix})
