"""What a disk job changes in EBS, planned from the disk's row alone (pure) and applied with
CreateTags / DeleteTags: every disk operation makes the tags of the disk's volumes and
snapshots agree with its committed row, so a job delivered twice, late or after a newer
request converges on the same tags.

- Name: resources still tagged with `tagged_name` (a rename not applied yet) get the
  disk's name in each name tag they carry (`disk_name`, `disk-name`) and in a `Name` of the
  form `gpu-dev-disk-<user>-<name>`.
- Deleted: every snapshot carries `delete-date` (the row's date) and `marked-deleted-at`.
- Not deleted (restored, renamed, created): no snapshot carries them any more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpudev.disks.ebs import (
    DELETE_DATE_TAG,
    MARKED_DELETED_TAG,
    NAME_TAGS,
    USER_TAG,
    disk_name_of,
    name_tag,
    tags_of,
)
from gpudev.models import Disk

BATCH = 500  # resources per CreateTags / DeleteTags call


@dataclass
class TagPlan:
    # (resource id, tags to set); grouped by identical tags when applied
    set_tags: list[tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    clear_deleted: list[str] = field(default_factory=list)  # snapshot ids
    resources: int = 0  # the disk's volumes and snapshots found

    @property
    def empty(self) -> bool:
        return not self.set_tags and not self.clear_deleted


def _renamed(disk: Disk, tags: dict[str, str]) -> dict[str, str]:
    old = disk.tagged_name
    if old is None or disk_name_of(tags) != old:
        return {}
    keys = [key for key in NAME_TAGS if tags.get(key) == old] or [NAME_TAGS[0]]
    changes = dict.fromkeys(keys, disk.disk_name)
    if tags.get("Name") == name_tag(disk.user_id, old):
        changes["Name"] = name_tag(disk.user_id, disk.disk_name)
    return changes


def plan_tags(
    disk: Disk,
    volumes: Iterable[dict[str, Any]],
    snapshots: Iterable[dict[str, Any]],
    now: datetime | None = None,
) -> TagPlan:
    names = {disk.disk_name, disk.tagged_name} - {None}
    plan = TagPlan()
    for kind, resources in (("volume", volumes), ("snapshot", snapshots)):
        for resource in resources:
            tags = tags_of(resource)
            if tags.get(USER_TAG) != disk.user_id or disk_name_of(tags) not in names:
                continue
            plan.resources += 1
            rid = resource["VolumeId" if kind == "volume" else "SnapshotId"]
            changes = _renamed(disk, tags)
            if kind == "snapshot" and disk.is_deleted and disk.delete_date is not None:
                marked = disk.marked_deleted_at or now or datetime.now(UTC)
                if tags.get(DELETE_DATE_TAG) != disk.delete_date.isoformat():
                    changes[DELETE_DATE_TAG] = disk.delete_date.isoformat()
                    changes[MARKED_DELETED_TAG] = marked.isoformat()
            elif kind == "snapshot" and (DELETE_DATE_TAG in tags or MARKED_DELETED_TAG in tags):
                plan.clear_deleted.append(rid)
            if changes:
                plan.set_tags.append((rid, tuple(sorted(changes.items()))))
    return plan


def apply_tags(ec2: Any, plan: TagPlan) -> None:
    by_tags: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    for rid, tags in plan.set_tags:
        by_tags[tags].append(rid)
    for tags, ids in by_tags.items():
        for start in range(0, len(ids), BATCH):
            ec2.create_tags(
                Resources=ids[start : start + BATCH],
                Tags=[{"Key": k, "Value": v} for k, v in tags],
            )
    for start in range(0, len(plan.clear_deleted), BATCH):
        ec2.delete_tags(
            Resources=plan.clear_deleted[start : start + BATCH],
            Tags=[{"Key": DELETE_DATE_TAG}, {"Key": MARKED_DELETED_TAG}],
        )
