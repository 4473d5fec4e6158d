"""The disk reconciler's view of `disks`: every row, and the EBS-derived columns written
set-based (one statement per kind of change). The reconciler (`gpudev/disks/reconcile.py`)
owns the transaction, the run lock taken in it, and the savepoints of its row-by-row retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import DiskRow, DiskState, ImportDisk, SyncDisk

LOCK_KEY = 7_216_004_002


def _columns(states: Sequence[DiskState]) -> dict[str, list[Any]]:
    return {
        "volume_ids": [s.ebs_volume_id for s in states],
        "sizes": [s.size_gb for s in states],
        "snapshot_counts": [s.snapshot_count for s in states],
        "backing_up": [s.is_backing_up for s in states],
        "last_snapshots": [s.last_snapshot_at for s in states],
    }


class DiskReconciliationRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def try_lock(self) -> bool:
        """One run at a time, until the caller's transaction ends; False if another holds it."""
        row = self._conn.execute(
            query("disk_reconciliation/try_lock"), {"key": LOCK_KEY}
        ).fetchone()
        return bool(row and row[0])

    def rows(self) -> list[DiskRow]:
        """Every disk row, deleted ones included."""
        with self._conn.cursor(row_factory=class_row(DiskRow)) as cur:
            return cur.execute(query("disk_reconciliation/rows")).fetchall()

    def import_disks(self, imports: Sequence[ImportDisk]) -> None:
        """Rows for volumes that have none."""
        self._conn.execute(
            query("disk_reconciliation/import"),
            {
                "user_ids": [i.user_id for i in imports],
                "disk_names": [i.disk_name for i in imports],
                **_columns([i.state for i in imports]),
            },
        )

    def sync(self, syncs: Sequence[SyncDisk]) -> None:
        """The fields AWS is the truth for, on rows matched to a volume."""
        self._conn.execute(
            query("disk_reconciliation/sync"),
            {"disk_ids": [s.disk_id for s in syncs], **_columns([s.state for s in syncs])},
        )
