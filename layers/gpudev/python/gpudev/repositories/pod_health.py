"""The pod health the availability updater watches: active reservations, and its findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from gpudev.db.rows import column_arrays, fetch_all
from gpudev.models import HealthRecorded, PodHealth, WatchedReservation


class PodHealthRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def watched(self) -> list[WatchedReservation]:
        return fetch_all(self._conn, "pod_health/live", WatchedReservation)

    def record(self, findings: Sequence[PodHealth]) -> list[HealthRecorded]:
        """Write every finding in one statement; the rows still active that took one."""
        if not findings:
            return []
        return fetch_all(
            self._conn,
            "pod_health/record",
            HealthRecorded,
            column_arrays(findings, *PodHealth.model_fields),
        )
