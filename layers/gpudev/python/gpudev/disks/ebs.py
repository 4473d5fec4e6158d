"""The disks' EBS resources: the tags that say whose disk a volume or snapshot is, and the
paginated listings every disk service reads them with (the reconciler, the disk jobs, the
purge). Tag names are the reference's (`gpu-dev-user`, `disk_name`, older `disk-name`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

USER_TAG = "gpu-dev-user"
NAME_TAGS = ("disk_name", "disk-name")  # the first is written; either is read
DELETE_DATE_TAG = "delete-date"
MARKED_DELETED_TAG = "marked-deleted-at"
GPU_DEV_TAG_FILTER = [{"Name": "tag-key", "Values": [USER_TAG]}]


def tags_of(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def disk_name_of(tags: dict[str, str]) -> str | None:
    return next((tags[key] for key in NAME_TAGS if tags.get(key)), None)


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
