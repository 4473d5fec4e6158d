"""Snapshot retention (pure): a live disk gets one more snapshot at every reservation's
end, so without a bound its snapshots grow forever and, at the region's snapshot quota,
every `CreateSnapshot` fails and every disk stays held. The daily purge (disks/purge.py)
applies this plan in the same run as the deleted disks' purge.

Per live disk (not deleted), its latest `keep` completed snapshots are kept and the older
completed ones deleted, so a snapshot only goes after `keep` newer ones completed. Never
deleted: a snapshot that is pending or failed; any snapshot of a disk a reservation holds
(it may be restoring from one, or saving); a snapshot that is the source of an existing
volume of ours (a volume being created from it, or made from it); a snapshot carrying
`delete-date` (a deleted disk's, the purge's own rule). Snapshots are matched to disks by
their `gpu-dev-user` and name tags, as the purge and the reconciler match them (a disk
being renamed: by either name)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from gpudev.disks.ebs import DELETE_DATE_TAG, USER_TAG, disk_name_of, tags_of
from gpudev.models import Disk

STATISTICS = ("retained_disks", "snapshots_retained", "snapshots_retired", "snapshots_sources")


@dataclass
class RetentionPlan:
    deletes: dict[UUID, list[str]] = field(default_factory=dict)  # disk → snapshots to delete
    statistics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATISTICS, 0))


def volume_sources(volumes: Iterable[dict[str, Any]]) -> set[str]:
    """The snapshots our existing volumes were (or are being) created from."""
    return {v["SnapshotId"] for v in volumes if v.get("SnapshotId")}


def plan_retention(
    disks: Iterable[Disk],
    snapshots: Iterable[dict[str, Any]],
    keep: int,
    sources: set[str],
) -> RetentionPlan:
    if keep < 1:
        raise ValueError(f"keep at least one snapshot of a disk; got {keep}")
    plan = RetentionPlan()
    by_name: dict[tuple[str, str], UUID] = {}
    for disk in disks:
        if disk.is_deleted or disk.reservation_id is not None:
            continue  # the purge's, or held: restoring from or saving to its snapshots
        for name in {disk.disk_name, disk.tagged_name} - {None}:
            by_name[(disk.user_id, str(name))] = disk.disk_id
    completed: dict[UUID, list[dict[str, Any]]] = {}
    for snapshot in snapshots:
        tags = tags_of(snapshot)
        disk_id = by_name.get((tags.get(USER_TAG, ""), disk_name_of(tags) or ""))
        if disk_id is None or DELETE_DATE_TAG in tags or snapshot.get("State") != "completed":
            continue
        completed.setdefault(disk_id, []).append(snapshot)
    for disk_id, found in completed.items():
        newest_first = sorted(found, key=lambda s: s["StartTime"], reverse=True)
        plan.statistics["retained_disks"] += 1
        plan.statistics["snapshots_retained"] += min(keep, len(newest_first))
        for snapshot in newest_first[keep:]:
            if snapshot["SnapshotId"] in sources:
                plan.statistics["snapshots_sources"] += 1
                continue
            plan.deletes.setdefault(disk_id, []).append(snapshot["SnapshotId"])
    plan.statistics["snapshots_retired"] = sum(len(ids) for ids in plan.deletes.values())
    return plan
