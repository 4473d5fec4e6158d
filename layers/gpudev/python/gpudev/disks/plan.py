"""The disk reconciliation planner (seed 000, "Disk Reconciliation Logic"): a pure function
from AWS volumes, their snapshots and the `disks` rows to the actions that make the database
true to EBS, with the seed's statistics.

1. In AWS, not in the database: import (is_deleted false, no operation, never used, held
   by nobody).
2. In the database, not in AWS: counted (orphaned active or deleted), never changed: between
   reservations a disk has no volume (snapshot-first), and who holds it is the lifecycle's.
3. In both: sync ebs_volume_id, size_gb, snapshot_count, is_backing_up, last_snapshot_at;
   nothing else. The holder (`reservation_id`, and `in_use` derived from it),
   `last_used`, `content_listing` and `lifecycle_error` belong to the lifecycle
   (migrations/0011_disk_holders.sql): the reconciler never writes them.
Rows match by volume id, then by (user, disk name). When several volumes carry the same
(user, disk name), the disk's volume is linked and the others are reported as duplicates:
the one its holder uses, else the one its row records, else the newest (`volume_rank`,
gpudev/disks/ebs.py: the rule the lifecycle takes a disk's existing volume by).
Without snapshot data (the snapshot query failed) snapshot fields are left as they are.

The snapshot figures never move backwards: the lifecycle records each completed snapshot
as it happens (gpudev/sql/disk_holds/record_snapshot.sql), and a listing whose newest
completed snapshot is older than the row's `last_snapshot_at` has not caught up with it
yet (DescribeSnapshots is eventually consistent): the row's count and time are kept. A
listing as new as the row, or newer, is the truth, its count included (lower when
snapshots were deleted).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from gpudev.disks.ebs import USER_TAG, disk_name_of, volume_rank
from gpudev.repositories.disk_reconciliation import DiskRow, DiskState, ImportDisk, SyncDisk

log = logging.getLogger(__name__)

STATISTICS = (
    "aws_volumes",
    "db_records",
    "synced",
    "updated",
    "created",
    "errors",
    "orphaned_db_active",
    "orphaned_db_deleted",
)


@dataclass(frozen=True)
class Volume:
    volume_id: str
    user_id: str
    disk_name: str
    size_gb: int
    attached: bool
    reservation_tag: uuid.UUID | None


@dataclass(frozen=True)
class Snapshots:
    count: int = 0
    backing_up: bool = False
    last_completed_at: datetime | None = None


@dataclass(frozen=True)
class Duplicate:
    user_id: str
    disk_name: str
    linked_volume_id: str
    duplicate_volume_id: str


@dataclass
class Plan:
    imports: list[ImportDisk] = field(default_factory=list)
    syncs: list[SyncDisk] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    skipped_volumes: list[str] = field(default_factory=list)
    statistics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATISTICS, 0))


def _tags(raw: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw.get("Tags", [])}


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def parse_volume(raw: dict[str, Any]) -> Volume | None:
    """A gpu-dev volume, or None (with a warning) when its identifying tags are missing."""
    tags = _tags(raw)
    disk_name = disk_name_of(tags)
    user_id = tags.get(USER_TAG)
    if not disk_name or not user_id:
        log.warning(
            "skipping volume %s: it needs disk-name/disk_name and gpu-dev-user tags",
            raw.get("VolumeId"),
        )
        return None
    return Volume(
        volume_id=raw["VolumeId"],
        user_id=user_id,
        disk_name=disk_name,
        size_gb=raw["Size"],
        attached=any(a.get("State") == "attached" for a in raw.get("Attachments", [])),
        reservation_tag=_uuid(tags.get("reservation_id") or tags.get("reservation-id")),
    )


def summarize_snapshots(
    raw_snapshots: Iterable[dict[str, Any]],
) -> dict[tuple[str, str], Snapshots]:
    """Snapshots grouped by (user, disk name) from their tags, in one pass."""
    summary: dict[tuple[str, str], Snapshots] = {}
    for raw in raw_snapshots:
        tags = _tags(raw)
        disk_name = disk_name_of(tags)
        user_id = tags.get(USER_TAG)
        if not disk_name or not user_id:
            continue
        current = summary.get((user_id, disk_name), Snapshots())
        if raw.get("State") == "pending":
            current = replace(current, backing_up=True)
        elif raw.get("State") == "completed":
            started = raw.get("StartTime")
            last = current.last_completed_at
            current = replace(
                current,
                count=current.count + 1,
                last_completed_at=started if last is None or (started and started > last) else last,
            )
        summary[(user_id, disk_name)] = current
    return summary


def _behind(snapshots: Snapshots, row: DiskRow) -> bool:
    """The listing does not show the newest completed snapshot the row knows of yet."""
    if row.last_snapshot_at is None:
        return False
    listed = snapshots.last_completed_at
    return listed is None or listed < row.last_snapshot_at


def _desired(volume: Volume, snapshots: Snapshots | None, row: DiskRow | None) -> DiskState:
    if snapshots is None and row is not None:  # no snapshot data: keep what we have
        count, backing_up, last = row.snapshot_count, row.is_backing_up, row.last_snapshot_at
    elif snapshots is not None and row is not None and _behind(snapshots, row):
        count, last = row.snapshot_count, row.last_snapshot_at  # never backwards
        backing_up = snapshots.backing_up
    else:
        snapshots = snapshots or Snapshots()
        count, backing_up, last = snapshots.count, snapshots.backing_up, snapshots.last_completed_at
    return DiskState(
        ebs_volume_id=volume.volume_id,
        size_gb=volume.size_gb,
        snapshot_count=count,
        is_backing_up=backing_up,
        last_snapshot_at=last,
    )


def _current(row: DiskRow) -> DiskState | None:
    if row.ebs_volume_id is None or row.size_gb is None:
        return None
    return DiskState(
        ebs_volume_id=row.ebs_volume_id,
        size_gb=row.size_gb,
        snapshot_count=row.snapshot_count,
        is_backing_up=row.is_backing_up,
        last_snapshot_at=row.last_snapshot_at,
    )


def plan_reconciliation(
    raw_volumes: list[dict[str, Any]],
    snapshots: dict[tuple[str, str], Snapshots] | None,
    rows: list[DiskRow],
) -> Plan:
    plan = Plan()
    stats = plan.statistics
    stats["aws_volumes"] = len(raw_volumes)
    stats["db_records"] = len(rows)
    by_volume = {r.ebs_volume_id: r for r in rows if r.ebs_volume_id}
    by_name = {(r.user_id, r.disk_name): r for r in rows}
    linked: dict[tuple[str, str], str] = {}
    matched: set[uuid.UUID] = set()
    held = {r.held_volume_id for r in rows if r.held_volume_id}

    # The disk's volume first among its duplicates (a stable sort: otherwise as listed).
    for raw in sorted(raw_volumes, key=lambda v: volume_rank(v, held, by_volume)):
        volume = parse_volume(raw)
        if volume is None:
            plan.skipped_volumes.append(raw.get("VolumeId", "?"))
            continue
        pair = (volume.user_id, volume.disk_name)
        row = by_volume.get(volume.volume_id) or by_name.get(pair)
        if (row is not None and row.disk_id in matched) or (row is None and pair in linked):
            plan.duplicates.append(Duplicate(*pair, linked[pair], volume.volume_id))
            continue
        linked[pair] = volume.volume_id
        disk_snapshots = None if snapshots is None else snapshots.get(pair, Snapshots())
        desired = _desired(volume, disk_snapshots, row)
        if row is None:
            plan.imports.append(ImportDisk(volume.user_id, volume.disk_name, desired))
            stats["created"] += 1
            continue
        matched.add(row.disk_id)
        if _current(row) == desired:
            stats["synced"] += 1
        else:
            plan.syncs.append(SyncDisk(row.disk_id, desired))
            stats["updated"] += 1

    for row in rows:
        if row.disk_id in matched:
            continue
        if row.is_deleted:
            stats["orphaned_db_deleted"] += 1
        else:
            stats["orphaned_db_active"] += 1
    return plan
