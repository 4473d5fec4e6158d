"""The daily purge of deleted disks (EventBridge `rate(1 day)`): the snapshots of every disk
whose `delete_date` has come are deleted, then its row. Plan + apply, like the reconcilers:
`plan_purge` is pure; `purge_disks` lists the snapshots (paginated), deletes, and records
the run in `reconciler_runs` as `disk_purge`.

Never before the date: only rows with `delete_date <= today` are read, and a snapshot whose
own `delete-date` tag says a later day, or that carries no `delete-date` yet (the delete
job has not tagged it; the purge's role may only delete snapshots that carry it), is left
(counted `snapshots_not_due`) and keeps its disk's row. A snapshot
EBS will not delete (used by an AMI: `InvalidSnapshot.InUse`, or any other refusal) is
reported and keeps its disk's row, so the next run tries again; one already gone counts as
deleted. The row goes only when none of its snapshots is left. `today` is injected (the
handler passes the UTC date), so tests choose the day.

The same run applies snapshot retention to the live disks (disks/retention.py): their
completed snapshots beyond the latest `keep` are deleted, never one a reservation may
restore from. A refused delete is reported like the purge's and tried again the next day.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from uuid import UUID

import psycopg
from botocore.exceptions import ClientError

from gpudev.disks.ebs import (
    DELETE_DATE_TAG,
    USER_TAG,
    disk_name_of,
    list_gpudev_snapshots,
    list_gpudev_volumes,
    tags_of,
)
from gpudev.disks.retention import STATISTICS as RETENTION_STATISTICS
from gpudev.disks.retention import RetentionPlan, plan_retention, volume_sources
from gpudev.models import Disk
from gpudev.observability import logger
from gpudev.repositories import DiskOperationsRepository, ReconcilerRunsRepository

RECONCILER = "disk_purge"
STATISTICS = (
    "due_disks",
    "snapshots_found",
    "snapshots_deleted",
    "snapshots_not_due",
    "snapshots_in_use",
    "errors",
    "disks_purged",
    *RETENTION_STATISTICS,
)
GONE = {"InvalidSnapshot.NotFound"}
IN_USE = {"InvalidSnapshot.InUse"}


@dataclass
class PurgePlan:
    deletes: dict[UUID, list[str]] = field(default_factory=dict)  # disk → its snapshot ids
    kept: set[UUID] = field(default_factory=set)  # disks with a snapshot not due yet
    statistics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATISTICS, 0))


def plan_purge(due: Iterable[Disk], snapshots: Iterable[dict[str, Any]], today: date) -> PurgePlan:
    plan = PurgePlan()
    by_name: dict[tuple[str, str], UUID] = {}
    for disk in due:
        if not disk.is_deleted or disk.delete_date is None or disk.delete_date > today:
            continue  # never before its date, whatever the caller passed
        plan.deletes[disk.disk_id] = []
        for name in {disk.disk_name, disk.tagged_name} - {None}:
            by_name[(disk.user_id, str(name))] = disk.disk_id
    plan.statistics["due_disks"] = len(plan.deletes)
    for snapshot in snapshots:
        tags = tags_of(snapshot)
        disk_id = by_name.get((tags.get(USER_TAG, ""), disk_name_of(tags) or ""))
        if disk_id is None:
            continue
        plan.statistics["snapshots_found"] += 1
        tagged_for = tags.get(DELETE_DATE_TAG)
        if tagged_for is None or tagged_for > today.isoformat():
            plan.statistics["snapshots_not_due"] += 1
            plan.kept.add(disk_id)
            continue
        plan.deletes[disk_id].append(snapshot["SnapshotId"])
    return plan


@dataclass
class DiskPurge:
    outcome: str  # succeeded | skipped | failed
    statistics: dict[str, int] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # snapshot id → why
    run_id: int | None = None


def _delete_snapshot(
    ec2: Any, snapshot_id: str, stats: dict[str, int], refused: dict[str, str]
) -> bool:
    """Whether the snapshot is gone (deleted now, or already); a refusal is reported."""
    try:
        ec2.delete_snapshot(SnapshotId=snapshot_id)
    except ClientError as exc:
        code = exc.response["Error"]["Code"]
        if code in GONE:
            return True
        refused[snapshot_id] = f"{code}: {exc.response['Error'].get('Message', '')}"
        stats["snapshots_in_use" if code in IN_USE else "errors"] += 1
        logger.warning("snapshot not deleted", extra={"snapshot_id": snapshot_id, "code": code})
        return False
    return True


def _delete_snapshots(ec2: Any, plan: PurgePlan, refused: dict[str, str]) -> set[UUID]:
    """Deletes the planned snapshots; returns the disks that have none left."""
    stats = plan.statistics
    emptied = set()
    for disk_id, snapshot_ids in plan.deletes.items():
        left = False
        for snapshot_id in snapshot_ids:
            if _delete_snapshot(ec2, snapshot_id, stats, refused):
                stats["snapshots_deleted"] += 1
            else:
                left = True
        if not left and disk_id not in plan.kept:
            emptied.add(disk_id)
    return emptied


def _retire_snapshots(
    ec2: Any, retention: RetentionPlan, stats: dict[str, int], refused: dict[str, str]
) -> None:
    """Deletes the snapshots retention retires; counts those gone in `snapshots_retired`."""
    retention.statistics["snapshots_retired"] = sum(
        _delete_snapshot(ec2, snapshot_id, stats, refused)
        for snapshot_ids in retention.deletes.values()
        for snapshot_id in snapshot_ids
    )
    stats.update(retention.statistics)


def purge_disks(
    conn: psycopg.Connection[Any], ec2: Any, invoked_by: str, today: date, keep: int = 3
) -> DiskPurge:
    """`keep`: how many completed snapshots of each live disk are kept (CDK context
    `diskSnapshotRetention`)."""
    runs = ReconcilerRunsRepository(conn)
    disks = DiskOperationsRepository(conn)
    refused: dict[str, str] = {}
    try:
        with conn.transaction():
            if not disks.try_lock_purge():
                run = runs.record(RECONCILER, invoked_by, "skipped", "another run is in progress")
                return DiskPurge("skipped", run_id=run.run_id)
            run = runs.start(RECONCILER, invoked_by)
            due = disks.due(today)
            live = disks.live()
            # Volumes before snapshots: a volume made meanwhile from a snapshot was made
            # from one of the latest, which retention keeps anyway.
            sources = volume_sources(list_gpudev_volumes(ec2))
            snapshots = list_gpudev_snapshots(ec2)
            plan = plan_purge(due, snapshots, today)
            emptied = _delete_snapshots(ec2, plan, refused)
            purged = disks.delete_purged(sorted(emptied), today) if emptied else []
            plan.statistics["disks_purged"] = len(purged)
            retention = plan_retention(live, snapshots, keep, sources)
            _retire_snapshots(ec2, retention, plan.statistics, refused)
            runs.finish(run.run_id, "succeeded", plan.statistics)
    except Exception as exc:
        with conn.transaction():
            runs.record(RECONCILER, invoked_by, "failed", f"{type(exc).__name__}: {exc}")
        raise
    logger.info("disk purge finished", extra={"statistics": plan.statistics, "refused": refused})
    return DiskPurge("succeeded", plan.statistics, refused, run.run_id)
