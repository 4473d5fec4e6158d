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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from uuid import UUID

import psycopg
from botocore.exceptions import ClientError

from gpudev.disks.ebs import DELETE_DATE_TAG, USER_TAG, disk_name_of, list_gpudev_snapshots, tags_of
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


def _delete_snapshots(ec2: Any, plan: PurgePlan, refused: dict[str, str]) -> set[UUID]:
    """Deletes the planned snapshots; returns the disks that have none left."""
    stats = plan.statistics
    emptied = set()
    for disk_id, snapshot_ids in plan.deletes.items():
        left = False
        for snapshot_id in snapshot_ids:
            try:
                ec2.delete_snapshot(SnapshotId=snapshot_id)
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                if code not in GONE:
                    left = True
                    refused[snapshot_id] = f"{code}: {exc.response['Error'].get('Message', '')}"
                    stats["snapshots_in_use" if code in IN_USE else "errors"] += 1
                    logger.warning(
                        "snapshot not purged", extra={"snapshot_id": snapshot_id, "code": code}
                    )
                    continue
            stats["snapshots_deleted"] += 1
        if not left and disk_id not in plan.kept:
            emptied.add(disk_id)
    return emptied


def purge_disks(conn: psycopg.Connection[Any], ec2: Any, invoked_by: str, today: date) -> DiskPurge:
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
            snapshots = list_gpudev_snapshots(ec2) if due else []
            plan = plan_purge(due, snapshots, today)
            emptied = _delete_snapshots(ec2, plan, refused)
            purged = disks.delete_purged(sorted(emptied), today) if emptied else []
            plan.statistics["disks_purged"] = len(purged)
            runs.finish(run.run_id, "succeeded", plan.statistics)
    except Exception as exc:
        with conn.transaction():
            runs.record(RECONCILER, invoked_by, "failed", f"{type(exc).__name__}: {exc}")
        raise
    logger.info("disk purge finished", extra={"statistics": plan.statistics, "refused": refused})
    return DiskPurge("succeeded", plan.statistics, refused, run.run_id)
