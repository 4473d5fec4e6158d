from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from gpudev.db.rows import fetch_one, fetch_returned
from gpudev.models import ReconcilerRun


class ReconcilerRunsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def start(self, reconciler: str, invoked_by: str) -> ReconcilerRun:
        return fetch_returned(
            self._conn,
            "reconciler_runs/start",
            ReconcilerRun,
            {"reconciler": reconciler, "invoked_by": invoked_by},
        )

    def finish(
        self,
        run_id: int,
        outcome: str,
        statistics: dict[str, Any],
        error: str | None = None,
    ) -> ReconcilerRun:
        return fetch_returned(
            self._conn,
            "reconciler_runs/finish",
            ReconcilerRun,
            {"run_id": run_id, "outcome": outcome, "statistics": Jsonb(statistics), "error": error},
        )

    def record(self, reconciler: str, invoked_by: str, outcome: str, error: str) -> ReconcilerRun:
        """A finished run with no work done (skipped, or failed), in one round trip."""
        return fetch_returned(
            self._conn,
            "reconciler_runs/record",
            ReconcilerRun,
            {
                "reconciler": reconciler,
                "invoked_by": invoked_by,
                "outcome": outcome,
                "error": error,
            },
        )

    def latest(self, reconciler: str) -> ReconcilerRun | None:
        return fetch_one(
            self._conn, "reconciler_runs/latest", ReconcilerRun, {"reconciler": reconciler}
        )
