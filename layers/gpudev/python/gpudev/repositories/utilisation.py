"""The utilisation tables and the reservations' idle columns (sql/utilisation/): GPU samples,
their hourly rollups, and idle reclaim's reads and writes (gpudev/utilisation/)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.db.queries import query
from gpudev.db.rows import column_arrays, fetch_all, fetch_one
from gpudev.models import Reservation
from gpudev.utilisation_rows import (
    GpuSampleRow,
    IdleCandidate,
    IdleChange,
    IdleRecorded,
    RecentUseRow,
    Sample,
    SamplesRecorded,
)

LOCK_KEY = 7_216_004_036


class UtilisationRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def try_lock(self) -> bool:
        row = self._conn.execute(query("utilisation/try_lock"), {"key": LOCK_KEY}).fetchone()
        return bool(row and row[0])

    def candidates(self) -> list[IdleCandidate]:
        return fetch_all(self._conn, "utilisation/candidates", IdleCandidate)

    def record_samples(
        self,
        samples: Sequence[Sample],
        sampled_at: datetime,
        *,
        period_seconds: float,
        window_seconds: float,
        busy_percent: float,
    ) -> SamplesRecorded:
        params = column_arrays(samples, *Sample.__dataclass_fields__) | {
            "sampled_at": sampled_at,
            "period_seconds": period_seconds,
            "window_seconds": window_seconds,
            "busy_percent": busy_percent,
        }
        row = fetch_one(self._conn, "utilisation/record_samples", SamplesRecorded, params)
        return row or SamplesRecorded(0, 0)

    def samples_since(self, reservation_id: UUID, since: datetime) -> list[GpuSampleRow]:
        return fetch_all(
            self._conn,
            "utilisation/recent",
            GpuSampleRow,
            {"reservation_id": reservation_id, "since": since},
        )

    def recent_use(self, username: str, since: datetime) -> list[RecentUseRow]:
        return fetch_all(
            self._conn,
            "utilisation/recent_use",
            RecentUseRow,
            {"user_id": username, "since": since},
        )

    def record_idle(
        self, changes: Sequence[IdleChange], seen: Sequence[IdleCandidate]
    ) -> list[IdleRecorded]:
        """Writes the changes planned from `seen`, each only if its row's idle state is still
        what the plan read (the candidates are not locked: the owner may change the timeout)."""
        if not changes:
            return []
        read = {c.reservation_id: c for c in seen}
        params = column_arrays(
            changes,
            "reservation_id",
            "active_at",
            "warning",
            "warned_at",
            "ends_at",
            "clear_warning",
            "ending",
        )
        planned_from = [read[c.reservation_id] for c in changes]
        params |= {
            "seen_timeout_minutes": [c.idle_timeout_minutes for c in planned_from],
            "seen_active_at": [c.idle_active_at for c in planned_from],
            "seen_warned_at": [c.idle_warned_at for c in planned_from],
        }
        return fetch_all(self._conn, "utilisation/record_idle", IdleRecorded, params)


def set_idle_timeout(
    conn: psycopg.Connection[Any], reservation_id: UUID, minutes: int | None
) -> Reservation | None:
    """The row with its new timeout, or None: it ended, or its idle ending is recorded."""
    return fetch_one(
        conn,
        "utilisation/set_idle_timeout",
        Reservation,
        {"reservation_id": reservation_id, "minutes": minutes},
    )
