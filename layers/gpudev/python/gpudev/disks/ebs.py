"""The disks' EBS resources: the tags that say whose disk a volume or snapshot is, and the
paginated listings every disk service reads them with (the reconciler, the disk jobs, the
purge, the lifecycle). This module owns the tag vocabulary: tag names are the reference's
(`gpu-dev-user`, `disk_name`, older `disk-name`); everything we make is tagged with
`disk_tags` and every search by name accepts both name keys (`disk_name_of`)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

USER_TAG = "gpu-dev-user"
NAME_TAGS = ("disk_name", "disk-name")  # the first is written; either is read
RESERVATION_TAG = "reservation-id"
# On a disk's existing volume (imported, made before the system) that a reservation attached
# or copied: the reservation's id. Such a volume is never deleted without a completed
# snapshot, even by a reservation that never mounted it (gpudev/lifecycle/disk.py).
ADOPTED_TAG = "gpu-dev-adopted-by"
DELETE_DATE_TAG = "delete-date"
MARKED_DELETED_TAG = "marked-deleted-at"
GPU_DEV_TAG_FILTER = [{"Name": "tag-key", "Values": [USER_TAG]}]


def tags_of(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def disk_name_of(tags: dict[str, str]) -> str | None:
    return next((tags[key] for key in NAME_TAGS if tags.get(key)), None)


def name_tag(user_id: str, disk_name: str) -> str:
    """The `Name` tag of a disk's volumes and snapshots."""
    return f"gpu-dev-disk-{user_id}-{disk_name}"


def disk_tags(user_id: str, disk_name: str, reservation_id: str) -> list[dict[str, str]]:
    """The tags of every volume and snapshot made for a disk (at creation, in one request)."""
    return [
        {"Key": USER_TAG, "Value": user_id},
        {"Key": NAME_TAGS[0], "Value": disk_name},
        {"Key": RESERVATION_TAG, "Value": reservation_id},
        {"Key": "Name", "Value": name_tag(user_id, disk_name)},
    ]


def is_adopted(resource: dict[str, Any]) -> bool:
    return ADOPTED_TAG in tags_of(resource)


def volume_rank(
    volume: dict[str, Any], held: Collection[str], recorded: Collection[str]
) -> tuple[bool, bool, float]:
    """Which of one disk's volumes is the disk's, best first (sort by it): the one its
    holder uses (`disks.held_volume_id`), else the one its row records
    (`disks.ebs_volume_id`), else the newest. The EBS reconciler links that one and
    reports the others as duplicates; the lifecycle takes that one (`DiskVolumes.current`)."""
    volume_id = volume.get("VolumeId")
    created = volume.get("CreateTime")
    return (
        volume_id not in held,
        volume_id not in recorded,
        -created.timestamp() if created is not None else 0.0,
    )


def _pages(ec2: Any, operation: str, key: str, page_size: int, **kwargs: Any) -> Iterator[Any]:
    paginator = ec2.get_paginator(operation)
    for page in paginator.paginate(PaginationConfig={"PageSize": page_size}, **kwargs):
        yield from page[key]


def list_gpudev_volumes(ec2: Any, user_id: str | None = None) -> list[dict[str, Any]]:
    """Every volume tagged `gpu-dev-user` (that user's only, if given)."""
    return list(_pages(ec2, "describe_volumes", "Volumes", 500, Filters=_filter(user_id)))


def list_gpudev_snapshots(ec2: Any, user_id: str | None = None) -> list[dict[str, Any]]:
    # Always filter by tag: OwnerIds=self alone can return thousands of unrelated snapshots.
    return list(
        _pages(
            ec2,
            "describe_snapshots",
            "Snapshots",
            1000,
            OwnerIds=["self"],
            Filters=_filter(user_id),
        )
    )


def _filter(user_id: str | None) -> list[dict[str, Any]]:
    if user_id is None:
        return GPU_DEV_TAG_FILTER
    return [{"Name": f"tag:{USER_TAG}", "Values": [user_id]}]
