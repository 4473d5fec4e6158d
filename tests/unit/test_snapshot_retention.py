"""Snapshot retention (gpudev/disks/retention.py), without I/O: a live disk keeps its
latest N completed snapshots; older ones go only once N newer ones completed, and never
one a reservation may restore from."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpudev.disks.retention import plan_retention, volume_sources
from tests.unit.test_disk_tagging_and_purge_plan import disk

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def snapshot(
    n: int, user: str = "alice", name: str = "data", state: str = "completed", **tags: str
) -> dict[str, Any]:
    all_tags = {"gpu-dev-user": user, "disk_name": name, **tags}
    return {
        "SnapshotId": f"snap-{user}-{name}-{n:02d}",
        "StartTime": T0 + timedelta(days=n),
        "State": state,
        "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items()],
    }


def retired(plan: Any) -> set[str]:
    return {s for ids in plan.deletes.values() for s in ids}


def test_the_latest_n_completed_snapshots_are_kept_and_the_older_retired():
    data = disk()
    snapshots = [snapshot(n) for n in (3, 1, 5, 2, 4)]  # listed in no particular order

    plan = plan_retention([data], snapshots, keep=3, sources=set())

    assert retired(plan) == {"snap-alice-data-01", "snap-alice-data-02"}
    assert plan.statistics == {
        "retained_disks": 1,
        "snapshots_retained": 3,
        "snapshots_retired": 2,
        "snapshots_sources": 0,
    }


def test_pending_and_failed_snapshots_never_count_nor_go():
    # Only two completed: a newer pending one has not completed, so nothing is retired.
    snapshots = [snapshot(1), snapshot(2), snapshot(3, state="pending"), snapshot(4, state="error")]
    plan = plan_retention([disk()], snapshots, keep=2, sources=set())
    assert retired(plan) == set()


def test_the_snapshot_a_volume_is_made_or_being_made_from_is_never_retired():
    snapshots = [snapshot(n) for n in range(1, 6)]
    volumes = [
        {"VolumeId": "vol-restoring", "SnapshotId": "snap-alice-data-01", "State": "creating"},
        {"VolumeId": "vol-blank", "SnapshotId": ""},
    ]
    plan = plan_retention([disk()], snapshots, keep=2, sources=volume_sources(volumes))
    assert retired(plan) == {"snap-alice-data-02", "snap-alice-data-03"}
    assert plan.statistics["snapshots_sources"] == 1


def test_a_held_disks_snapshots_are_left_while_a_reservation_holds_it():
    held = disk(reservation_id=uuid.uuid4(), in_use=True)
    plan = plan_retention([held], [snapshot(n) for n in range(1, 6)], keep=1, sources=set())
    assert retired(plan) == set() and plan.statistics["retained_disks"] == 0


def test_deleted_disks_and_snapshots_tagged_for_deletion_are_the_purges():
    gone = disk(is_deleted=True, disk_name="old")
    live = disk()
    snapshots = [snapshot(n, name="old") for n in range(1, 5)] + [
        snapshot(n, **{"delete-date": "2026-12-01"}) for n in range(1, 5)
    ]
    plan = plan_retention([gone, live], snapshots, keep=1, sources=set())
    assert retired(plan) == set()


def test_snapshots_are_matched_by_owner_and_either_name_of_a_disk_being_renamed():
    renamed = disk(disk_name="new", tagged_name="data")
    other_owner = [snapshot(n, user="bob") for n in range(1, 4)]
    plan = plan_retention([renamed], [snapshot(n) for n in range(1, 4)] + other_owner, 1, set())
    assert retired(plan) == {"snap-alice-data-01", "snap-alice-data-02"}


@pytest.mark.parametrize("keep", [0, -1])
def test_a_retention_that_would_keep_nothing_is_refused(keep):
    with pytest.raises(ValueError, match="at least one"):
        plan_retention([disk()], [snapshot(1)], keep=keep, sources=set())
