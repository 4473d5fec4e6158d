"""Who holds a named disk: the lifecycle's columns of `disks` (migrations/0011): take and
free are single conditional statements, so two holders are impossible whatever runs at
once; the EBS reconciler never writes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import Disk


class DiskHoldsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _one(self, name: str, params: dict[str, Any]) -> Disk | None:
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(query(f"disk_holds/{name}"), params).fetchone()

    def take(self, reservation_id: UUID, user_id: str, disk_name: str) -> Disk | None:
        """The disk, now held by `reservation_id`; None if another holds it, or it is
        deleted or gone."""
        return self._one(
            "take",
            {"reservation_id": reservation_id, "user_id": user_id, "disk_name": disk_name},
        )

    def named(self, user_id: str, disk_name: str) -> Disk | None:
        return self._one("named", {"user_id": user_id, "disk_name": disk_name})

    def held_by(self, reservation_id: UUID) -> Disk | None:
        return self._one("held_by", {"reservation_id": reservation_id})

    def record_error(self, reservation_id: UUID, error: str) -> Disk | None:
        return self._one("record_error", {"reservation_id": reservation_id, "error": error})

    def record_volume(self, reservation_id: UUID, volume_id: str) -> Disk | None:
        return self._one(
            "record_volume", {"reservation_id": reservation_id, "volume_id": volume_id}
        )

    def snapshot_started(self, reservation_id: UUID) -> Disk | None:
        """The holder snapshots the disk: it is backing up."""
        return self._snapshot(reservation_id, completed=False, backing_up=True)

    def snapshot_completed(
        self, reservation_id: UUID, started_at: datetime, size_gb: int | None
    ) -> Disk | None:
        """Counted once (by its start time, the last snapshot's time), its size the disk's."""
        return self._snapshot(
            reservation_id, completed=True, backing_up=False, started_at=started_at, size_gb=size_gb
        )

    def snapshot_dropped(self, reservation_id: UUID) -> Disk | None:
        """The holder deleted its unfinished (or failed) snapshot: no longer backing up."""
        return self._snapshot(reservation_id, completed=False, backing_up=False)

    def _snapshot(
        self,
        reservation_id: UUID,
        *,
        completed: bool,
        backing_up: bool,
        started_at: datetime | None = None,
        size_gb: int | None = None,
    ) -> Disk | None:
        return self._one(
            "record_snapshot",
            {
                "reservation_id": reservation_id,
                "completed": completed,
                "backing_up": backing_up,
                "started_at": started_at,
                "size_gb": size_gb,
            },
        )

    def record_listing(self, reservation_id: UUID, listing: str) -> Disk | None:
        return self._one("record_listing", {"reservation_id": reservation_id, "listing": listing})

    def free(self, reservation_id: UUID) -> Disk | None:
        """None if `reservation_id` holds no disk (freed already)."""
        return self._one("free", {"reservation_id": reservation_id})
