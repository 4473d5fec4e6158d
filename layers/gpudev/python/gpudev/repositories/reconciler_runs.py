from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from gpudev.db.queries import query
from gpudev.models import ReconcilerRun


class ReconcilerRunsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def start(self, reconciler: str, invoked_by: str) -> ReconcilerRun:
        with self._conn.cursor(row_factory=class_row(ReconcilerRun)) as cur:
            row = cur.execute(
                query("reconciler_runs/start"),
                {"reconciler": reconciler, "invoked_by": invoked_by},
            ).fetchone()
        assert row is not None
        return row

    def finish(
        self,
        run_id: int,
        outcome: str,
        statistics: dict[str, Any],
        error: str | None = None,
    ) -> ReconcilerRun:
        with self._conn.cursor(row_factory=class_row(ReconcilerRun)) as cur:
            row = cur.execute(
                query("reconciler_runs/finish"),
                {
                    "run_id": run_id,
                    "outcome": outcome,
                    "statistics": Jsonb(statistics),
                    "error": error,
                },
            ).fetchone()
        assert row is not None
        return row

    def record(self, reconciler: str, invoked_by: str, outcome: str, error: str) -> ReconcilerRun:
        """A finished run with no work done (skipped, or failed), in one round trip."""
        with self._conn.cursor(row_factory=class_row(ReconcilerRun)) as cur:
            row = cur.execute(
                query("reconciler_runs/record"),
                {
                    "reconciler": reconciler,
                    "invoked_by": invoked_by,
                    "outcome": outcome,
                    "error": error,
                },
            ).fetchone()
        assert row is not None
        return row

    def latest(self, reconciler: str) -> ReconcilerRun | None:
        with self._conn.cursor(row_factory=class_row(ReconcilerRun)) as cur:
            return cur.execute(
                query("reconciler_runs/latest"), {"reconciler": reconciler}
            ).fetchone()
