"""The pure halves of the disk jobs and the purge: which tags a disk's row asks for
(gpudev/disks/tagging.py) and what the purge deletes on a given day (gpudev/disks/purge.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

from cdk_app.declaration import EBS_OWNER_TAG
from gpudev.disks.ebs import USER_TAG
from gpudev.disks.purge import plan_purge
from gpudev.disks.tagging import plan_tags
from gpudev.models import Disk

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)
DAY = date(2026, 12, 23)


def disk(**changes: Any) -> Disk:
    values: dict[str, Any] = {
        "disk_id": uuid.uuid4(),
        "user_id": "alice",
        "disk_name": "data",
        "ebs_volume_id": None,
        "size_gb": None,
        "disk_size": None,
        "in_use": False,
        "reservation_id": None,
        "is_deleted": False,
        "delete_date": None,
        "marked_deleted_at": None,
        "snapshot_count": 0,
        "pending_snapshot_count": 0,
        "is_backing_up": False,
        "last_snapshot_at": None,
        "operation_id": uuid.uuid4(),
        "operation_status": "running",
        "operation_error": None,
        "lifecycle_error": None,
        "last_used": None,
        "latest_snapshot_content_s3": None,
        "created_at": NOW,
        "last_updated": NOW,
    }
    return Disk.model_validate(values | changes)


def snap(sid: str, user: str = "alice", name: str = "data", **tags: str) -> dict[str, Any]:
    pairs = {"gpu-dev-user": user, "disk_name": name, **tags}
    return {"SnapshotId": sid, "Tags": [{"Key": k, "Value": v} for k, v in pairs.items()]}


def test_the_cdk_app_and_the_layer_agree_on_the_tag_that_marks_our_resources():
    assert EBS_OWNER_TAG == USER_TAG


def test_a_deleted_disk_asks_for_its_date_on_each_of_its_snapshots_only():
    row = disk(is_deleted=True, delete_date=DAY, marked_deleted_at=NOW)
    plan = plan_tags(
        row,
        [{"VolumeId": "vol-1", "Tags": snap("x")["Tags"]}],
        [snap("snap-1"), snap("snap-2", **{"delete-date": DAY.isoformat()}), snap("snap-3", "bob")],
    )
    assert plan.resources == 3
    assert plan.set_tags == [
        ("snap-1", (("delete-date", "2026-12-23"), ("marked-deleted-at", NOW.isoformat())))
    ]
    assert plan.clear_deleted == []


def test_a_disk_not_deleted_asks_for_its_deletion_tags_to_go():
    plan = plan_tags(disk(), [], [snap("snap-1", **{"delete-date": "2026-12-23"}), snap("snap-2")])
    assert plan.clear_deleted == ["snap-1"] and plan.set_tags == []


def test_a_pending_rename_renames_each_name_tag_the_resource_carries():
    row = disk(disk_name="work", tagged_name="data")
    volume = {
        "VolumeId": "vol-1",
        "Tags": [
            {"Key": "gpu-dev-user", "Value": "alice"},
            {"Key": "disk-name", "Value": "data"},
            {"Key": "Name", "Value": "gpu-dev-disk-alice-data"},
        ],
    }
    plan = plan_tags(row, [volume], [snap("snap-1"), snap("snap-2", name="work")])
    assert plan.set_tags == [
        ("vol-1", (("Name", "gpu-dev-disk-alice-work"), ("disk-name", "work"))),
        ("snap-1", (("disk_name", "work"),)),
    ]


def test_the_tags_of_a_disk_that_agree_with_its_row_need_nothing():
    assert plan_tags(disk(), [], [snap("snap-1")]).empty


def test_the_purge_plans_only_disks_whose_date_has_come():
    due = disk(is_deleted=True, delete_date=DAY)
    early = disk(is_deleted=True, delete_date=date(2026, 12, 24), disk_name="later")
    alive = disk(disk_name="alive")
    plan = plan_purge(
        [due, early, alive],
        [
            snap("snap-1", **{"delete-date": DAY.isoformat()}),
            snap("snap-2", name="later", **{"delete-date": "2026-12-24"}),
            snap("snap-3", name="alive"),
        ],
        today=DAY,
    )
    assert plan.deletes == {due.disk_id: ["snap-1"]}
    assert plan.statistics["due_disks"] == 1 and plan.statistics["snapshots_found"] == 1


def test_the_purge_leaves_a_snapshot_tagged_for_a_later_day_and_keeps_its_disk():
    due = disk(is_deleted=True, delete_date=DAY)
    plan = plan_purge(
        [due],
        [
            snap("snap-1", **{"delete-date": "2027-01-01"}),
            snap("snap-2", **{"delete-date": DAY.isoformat()}),
        ],
        today=DAY,
    )
    assert plan.deletes == {due.disk_id: ["snap-2"]}
    assert plan.kept == {due.disk_id} and plan.statistics["snapshots_not_due"] == 1


def test_a_due_disk_without_snapshots_is_planned_with_nothing_to_delete():
    due = disk(is_deleted=True, delete_date=DAY)
    plan = plan_purge([due], [], today=DAY)
    assert plan.deletes == {due.disk_id: []} and plan.kept == set()


def test_the_purge_leaves_a_snapshot_the_delete_job_has_not_tagged_and_keeps_its_disk():
    """The purge's role may delete only snapshots carrying delete-date: one without it (its
    disk's delete job has not reached it) is not planned, and the row waits for it."""
    due = disk(is_deleted=True, delete_date=DAY)
    plan = plan_purge(
        [due], [snap("snap-1"), snap("snap-2", **{"delete-date": DAY.isoformat()})], today=DAY
    )
    assert plan.deletes == {due.disk_id: ["snap-2"]}
    assert plan.kept == {due.disk_id} and plan.statistics["snapshots_not_due"] == 1
