"""The disk jobs' and the purge's view of `disks`: an operation started, finished or failed
on its row, one job per disk at a time, and the deleted disks whose date has come. The
services (`gpudev/disks/operations.py`, `gpudev/disks/purge.py`) own the transactions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import Disk

PURGE_LOCK_KEY = 7_216_004_003


class DiskOperationsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _disk(self, name: str, params: dict[str, Any]) -> Disk | None:
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(query(name), params).fetchone()

    def lock(self, disk_id: UUID) -> None:
        """Waits (up to lock_timeout) while another job of this disk runs."""
        self._conn.execute(query("disks/operation_lock"), {"disk_id": disk_id})

    def unlock(self, disk_id: UUID) -> None:
        self._conn.execute(query("disks/operation_unlock"), {"disk_id": disk_id})

    def get(self, disk_id: UUID) -> Disk | None:
        return self._disk("disks/get_by_id", {"disk_id": disk_id})

    def start(self, disk_id: UUID, operation_id: UUID) -> Disk | None:
        """The disk, its operation now running; None if gone, superseded or done."""
        return self._disk(
            "disks/operation_start", {"disk_id": disk_id, "operation_id": operation_id}
        )

    def done(self, disk_id: UUID, operation_id: UUID, tagged_as: str) -> Disk | None:
        return self._disk(
            "disks/operation_done",
            {"disk_id": disk_id, "operation_id": operation_id, "tagged_as": tagged_as},
        )

    def failed(self, disk_id: UUID, operation_id: UUID, error: str) -> Disk | None:
        return self._disk(
            "disks/operation_failed",
            {"disk_id": disk_id, "operation_id": operation_id, "error": error},
        )

    def try_lock_purge(self) -> bool:
        """One purge at a time, until the caller's transaction ends."""
        row = self._conn.execute(query("disks/purge_try_lock"), {"key": PURGE_LOCK_KEY}).fetchone()
        return bool(row and row[0])

    def due(self, today: date) -> list[Disk]:
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(query("disks/purge_due"), {"today": today}).fetchall()

    def live(self) -> list[Disk]:
        """Every disk not deleted (snapshot retention, disks/retention.py)."""
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(query("disks/retention_live")).fetchall()

    def delete_purged(self, disk_ids: Sequence[UUID], today: date) -> list[UUID]:
        rows = self._conn.execute(
            query("disks/purge_delete"), {"disk_ids": list(disk_ids), "today": today}
        ).fetchall()
        return [row[0] for row in rows]
