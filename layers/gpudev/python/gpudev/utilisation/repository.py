"""The utilisation tables and the reservations' idle columns (sql/utilisation/)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.db.queries import query
from gpudev.db.rows import column_arrays, fetch_all, fetch_one
from gpudev.models import Reservation
from gpudev.utilisation.idle import IdleCandidate, IdleChange

LOCK_KEY = 7_216_004_036


@dataclass(frozen=True)
class Sample:
    reservation_id: UUID
    gpu: str
    util_percent: float
    memory_used_mib: float


@dataclass(frozen=True)
class SamplesRecorded:
    samples: int
    pruned: int


@dataclass(frozen=True)
class IdleRecorded:
    reservation_id: UUID
    task_token: str | None
    idle_ending: str | None
    warning_changed: bool


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

    def record_idle(self, changes: Sequence[IdleChange]) -> list[IdleRecorded]:
        if not changes:
            return []
        return fetch_all(
            self._conn,
            "utilisation/record_idle",
            IdleRecorded,
            column_arrays(
                changes,
                "reservation_id",
                "active_at",
                "warning",
                "warned_at",
                "clear_warning",
                "ending",
            ),
        )


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
