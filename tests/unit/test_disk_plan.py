"""Seed 000's disk reconciliation rules, case by case, on the pure planner."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpudev.disks.plan import (
    STATISTICS,
    DiskRow,
    Snapshots,
    plan_reconciliation,
    summarize_snapshots,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
RESERVATION = uuid.UUID("11111111-2222-3333-4444-555555555555")


def volume(
    vid: str,
    user: str = "alice",
    disk: str = "work",
    size: int = 1024,
    attached: bool = False,
    name_tag: str = "disk_name",
    **tags: str,
) -> dict[str, Any]:
    all_tags = {"gpu-dev-user": user, name_tag: disk, **tags}
    return {
        "VolumeId": vid,
        "Size": size,
        "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items() if v is not None],
        "Attachments": [{"State": "attached", "InstanceId": "i-1"}] if attached else [],
    }


def row(user: str = "alice", disk: str = "work", **fields: Any) -> DiskRow:
    values: dict[str, Any] = {
        "disk_id": uuid.uuid4(),
        "user_id": user,
        "disk_name": disk,
        "ebs_volume_id": None,
        "size_gb": None,
        "in_use": False,
        "reservation_id": None,
        "is_deleted": False,
        "snapshot_count": 0,
        "is_backing_up": False,
        "last_snapshot_at": None,
    }
    values.update(fields)
    return DiskRow(**values)


def stats(**expected: int) -> dict[str, int]:
    return {name: expected.get(name, 0) for name in STATISTICS}


def test_case_1_volume_without_row_is_imported():
    snaps = {("alice", "work"): Snapshots(count=3, backing_up=True, last_completed_at=T0)}
    plan = plan_reconciliation([volume("vol-1", attached=True)], snaps, [])
    (imported,) = plan.imports
    assert (imported.user_id, imported.disk_name) == ("alice", "work")
    state = imported.state
    assert (
        state.ebs_volume_id,
        state.size_gb,
        state.snapshot_count,
        state.is_backing_up,
        state.last_snapshot_at,
    ) == ("vol-1", 1024, 3, True, T0)
    assert not hasattr(state, "reservation_id"), "an imported disk is held by nobody"
    assert plan.statistics == stats(aws_volumes=1, created=1)


def test_the_disk_name_tag_may_be_spelled_with_a_hyphen():
    plan = plan_reconciliation([volume("vol-1", name_tag="disk-name")], {}, [])
    assert plan.imports[0].disk_name == "work"


@pytest.mark.parametrize("missing", ["gpu-dev-user", "disk_name"])
def test_volumes_missing_identifying_tags_are_skipped(missing: str, caplog):
    raw = volume("vol-1")
    raw["Tags"] = [t for t in raw["Tags"] if t["Key"] != missing]
    plan = plan_reconciliation([raw], {}, [])
    assert plan.imports == [] and plan.skipped_volumes == ["vol-1"]
    assert plan.statistics == stats(aws_volumes=1)
    assert "skipping volume vol-1" in caplog.text


def test_case_2a_active_row_without_volume_is_counted_and_never_released():
    # Snapshot-first: a held disk has no volume until its reservation creates one, and
    # none after it is saved; the holder is the lifecycle's (migration 0011).
    held = row(in_use=True, reservation_id=RESERVATION, ebs_volume_id="vol-gone", size_gb=10)
    idle = row(disk="idle")
    plan = plan_reconciliation([], {}, [held, idle])
    assert plan.syncs == [] and plan.imports == []
    assert not hasattr(plan, "releases")
    assert plan.statistics == stats(db_records=2, orphaned_db_active=2)


def test_case_2b_deleted_row_without_volume_is_left_alone():
    plan = plan_reconciliation([], {}, [row(is_deleted=True, in_use=True)])
    assert plan.syncs == []
    assert plan.statistics == stats(db_records=1, orphaned_db_deleted=1)


def test_case_3_matching_row_already_true_counts_as_synced():
    current = row(ebs_volume_id="vol-1", size_gb=1024, snapshot_count=2, last_snapshot_at=T0)
    snaps = {("alice", "work"): Snapshots(count=2, last_completed_at=T0)}
    plan = plan_reconciliation([volume("vol-1")], snaps, [current])
    assert plan.syncs == [] and plan.statistics == stats(aws_volumes=1, db_records=1, synced=1)


def test_case_3_drift_is_synced_field_by_field():
    current = row(ebs_volume_id=None, size_gb=100, in_use=False)
    snaps = {("alice", "work"): Snapshots(count=5, backing_up=True, last_completed_at=T0)}
    plan = plan_reconciliation(
        [volume("vol-9", size=2048, attached=True, reservation_id=str(RESERVATION))],
        snaps,
        [current],
    )
    (sync,) = plan.syncs
    assert sync.disk_id == current.disk_id
    assert (
        sync.state.ebs_volume_id,
        sync.state.size_gb,
        sync.state.snapshot_count,
        sync.state.is_backing_up,
    ) == ("vol-9", 2048, 5, True)
    assert plan.statistics == stats(aws_volumes=1, db_records=1, updated=1)


@pytest.mark.parametrize("attached", [False, True])
@pytest.mark.parametrize("holder", [None, RESERVATION])
def test_attachments_never_change_the_holder(attached: bool, holder: uuid.UUID | None):
    # Attached or not, tagged with a reservation or not: the holder is the lifecycle's.
    current = row(
        ebs_volume_id="vol-1", size_gb=1024, in_use=holder is not None, reservation_id=holder
    )
    raw = volume("vol-1", attached=attached, reservation_id=str(uuid.uuid4()))
    plan = plan_reconciliation([raw], {}, [current])
    assert plan.syncs == [] and plan.statistics["synced"] == 1


def test_rows_match_by_volume_id_before_name():
    by_id = row(disk="renamed", ebs_volume_id="vol-1", size_gb=1024)
    by_name = row(disk="work", ebs_volume_id="vol-other", size_gb=1024)
    plan = plan_reconciliation([volume("vol-1", disk="work")], {}, [by_id, by_name])
    assert plan.syncs == [] and plan.statistics["synced"] == 1
    assert plan.statistics["orphaned_db_active"] == 1  # by_name: its own volume is gone


def test_duplicate_volumes_link_the_first_and_report_the_rest():
    plan = plan_reconciliation([volume("vol-a"), volume("vol-b")], {}, [])
    assert [i.state.ebs_volume_id for i in plan.imports] == ["vol-a"]
    (duplicate,) = plan.duplicates
    assert (duplicate.linked_volume_id, duplicate.duplicate_volume_id) == ("vol-a", "vol-b")
    assert plan.statistics == stats(aws_volumes=2, created=1)


def test_duplicates_of_an_existing_row_do_not_steal_it():
    current = row(ebs_volume_id="vol-a", size_gb=1024)
    plan = plan_reconciliation([volume("vol-a"), volume("vol-b")], {}, [current])
    assert plan.syncs == [] and plan.imports == []
    assert [d.duplicate_volume_id for d in plan.duplicates] == ["vol-b"]


def test_without_snapshot_data_snapshot_fields_are_kept():
    current = row(
        ebs_volume_id="vol-1", size_gb=10, snapshot_count=7, is_backing_up=True, last_snapshot_at=T0
    )
    plan = plan_reconciliation([volume("vol-1", size=20)], None, [current])
    (sync,) = plan.syncs
    assert (
        sync.state.size_gb,
        sync.state.snapshot_count,
        sync.state.is_backing_up,
        sync.state.last_snapshot_at,
    ) == (20, 7, True, T0)


def test_import_without_snapshot_data_starts_from_zero():
    plan = plan_reconciliation([volume("vol-1")], None, [])
    assert (plan.imports[0].state.snapshot_count, plan.imports[0].state.is_backing_up) == (0, False)


def test_snapshots_are_summarized_per_disk_from_tags():
    def snap(state: str, when: datetime, user: str = "alice", disk: str = "work") -> dict:
        return {
            "State": state,
            "StartTime": when,
            "Tags": [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}],
        }

    summary = summarize_snapshots(
        [
            snap("completed", T0),
            snap("completed", T0 + timedelta(days=2)),
            snap("pending", T0 + timedelta(days=3)),
            snap("completed", T0, disk="other"),
            {"State": "completed", "StartTime": T0, "Tags": []},
        ]
    )
    assert summary[("alice", "work")] == Snapshots(2, True, T0 + timedelta(days=2))
    assert summary[("alice", "other")] == Snapshots(1, False, T0)
    assert len(summary) == 2


def test_statistics_use_exactly_the_seed_names():
    assert STATISTICS == (
        "aws_volumes",
        "db_records",
        "synced",
        "updated",
        "created",
        "errors",
        "orphaned_db_active",
        "orphaned_db_deleted",
    )


def _created(raw: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {**raw, "CreateTime": at}


def test_of_several_volumes_of_a_disk_the_newest_is_linked_and_the_others_reported():
    older, newer = _created(volume("vol-old"), T0), _created(volume("vol-new"), T0 + timedelta(1))
    plan = plan_reconciliation([older, newer], {}, [])
    assert [i.state.ebs_volume_id for i in plan.imports] == ["vol-new"]
    assert [(d.linked_volume_id, d.duplicate_volume_id) for d in plan.duplicates] == [
        ("vol-new", "vol-old")
    ]


def test_the_recorded_volume_is_linked_before_a_newer_one():
    current = row(ebs_volume_id="vol-old", size_gb=1024)
    older, newer = _created(volume("vol-old"), T0), _created(volume("vol-new"), T0 + timedelta(1))
    plan = plan_reconciliation([newer, older], {}, [current])
    assert plan.syncs == [] and [d.duplicate_volume_id for d in plan.duplicates] == ["vol-new"]


def test_the_volume_the_holder_mounts_is_linked_before_the_recorded_one():
    """As the lifecycle copies an imported volume to the node's zone: while both exist the
    reservation's copy is the disk's, never a duplicate to act on."""
    current = row(
        ebs_volume_id="vol-imported",
        size_gb=1024,
        reservation_id=RESERVATION,
        held_volume_id="vol-copy",
    )
    imported = _created(volume("vol-imported"), T0 + timedelta(1))
    copy = _created(volume("vol-copy", reservation_id=str(RESERVATION)), T0)
    plan = plan_reconciliation([imported, copy], {}, [current])
    (sync,) = plan.syncs
    assert sync.state.ebs_volume_id == "vol-copy"
    assert [d.duplicate_volume_id for d in plan.duplicates] == ["vol-imported"]


def test_a_listing_behind_the_row_never_moves_the_snapshot_figures_backwards():
    """The lifecycle recorded a snapshot at T0 + 1 h that DescribeSnapshots does not list
    yet: the row's count and time stay; the listing's backing-up flag is taken."""
    current = row(
        ebs_volume_id="vol-1",
        size_gb=1024,
        snapshot_count=3,
        last_snapshot_at=T0 + timedelta(hours=1),
    )
    snaps = {("alice", "work"): Snapshots(count=2, backing_up=True, last_completed_at=T0)}
    plan = plan_reconciliation([volume("vol-1")], snaps, [current])
    (sync,) = plan.syncs
    assert (sync.state.snapshot_count, sync.state.last_snapshot_at, sync.state.is_backing_up) == (
        3,
        T0 + timedelta(hours=1),
        True,
    )
    nothing_listed = plan_reconciliation([volume("vol-1")], {}, [current])
    assert nothing_listed.syncs == [] and nothing_listed.statistics["synced"] == 1


@pytest.mark.parametrize("listed_count", [1, 5])
def test_a_listing_as_new_as_the_row_or_newer_is_the_truth_count_included(listed_count: int):
    """Caught up, EBS's count is taken, lower too (snapshots deleted outside gpu-dev)."""
    current = row(ebs_volume_id="vol-1", size_gb=1024, snapshot_count=3, last_snapshot_at=T0)
    for last in (T0, T0 + timedelta(minutes=5)):
        snaps = {("alice", "work"): Snapshots(count=listed_count, last_completed_at=last)}
        (sync,) = plan_reconciliation([volume("vol-1")], snaps, [current]).syncs
        assert (sync.state.snapshot_count, sync.state.last_snapshot_at) == (listed_count, last)
