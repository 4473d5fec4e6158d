"""The disk reconciler's view of `disks`: every row, and the EBS-derived columns written
set-based (one statement per kind of change). The reconciler (`gpudev/disks/reconcile.py`)
owns the transaction, the run lock taken in it, and the savepoints of its row-by-row retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.db.queries import query
from gpudev.db.rows import column_arrays, fetch_all

LOCK_KEY = 7_216_004_002


# The disk reconciler's values: a row, the state AWS says it should have, its writes.
@dataclass(frozen=True)
class DiskRow:
    disk_id: UUID
    user_id: str
    disk_name: str
    ebs_volume_id: str | None
    size_gb: int | None
    in_use: bool
    reservation_id: UUID | None
    is_deleted: bool
    snapshot_count: int
    is_backing_up: bool
    last_snapshot_at: datetime | None
    held_volume_id: str | None = None  # the lifecycle's: the volume its holder uses


@dataclass(frozen=True)
class DiskState:
    """The reconcilable fields, as AWS says they should be (never the holder: the
    lifecycle's, migrations/0011_disk_holders.sql)."""

    ebs_volume_id: str
    size_gb: int
    snapshot_count: int
    is_backing_up: bool
    last_snapshot_at: datetime | None


@dataclass(frozen=True)
class ImportDisk:
    user_id: str
    disk_name: str
    state: DiskState


@dataclass(frozen=True)
class SyncDisk:
    disk_id: UUID
    state: DiskState


def _columns(states: Sequence[DiskState]) -> dict[str, list[Any]]:
    return column_arrays(
        states,
        volume_ids="ebs_volume_id",
        sizes="size_gb",
        snapshot_counts="snapshot_count",
        backing_up="is_backing_up",
        last_snapshots="last_snapshot_at",
    )


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
        return fetch_all(self._conn, "disk_reconciliation/rows", DiskRow)

    def import_disks(self, imports: Sequence[ImportDisk]) -> None:
        """Rows for volumes that have none."""
        self._conn.execute(
            query("disk_reconciliation/import"),
            {
                **column_arrays(imports, user_ids="user_id", disk_names="disk_name"),
                **_columns([i.state for i in imports]),
            },
        )

    def sync(self, syncs: Sequence[SyncDisk]) -> None:
        """The fields AWS is the truth for, on rows matched to a volume."""
        self._conn.execute(
            query("disk_reconciliation/sync"),
            {**column_arrays(syncs, disk_ids="disk_id"), **_columns([s.state for s in syncs])},
        )
