"""The daily disk purge (gpudev/disks/purge.py) against real PostgreSQL and moto's EC2:
delete → the job tags the snapshots → the purge deletes them and the row on the date, never
before; a snapshot EBS will not delete is reported and keeps its row; every run is
recorded in reconciler_runs as `disk_purge`."""

from __future__ import annotations

import time
from datetime import date, timedelta
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from botocore.exceptions import ClientError

from gpudev.disks.ebs import list_gpudev_snapshots
from gpudev.disks.operations import DiskOperations
from gpudev.disks.purge import purge_disks
from gpudev.disks.requests import DiskRequest, create_disk, delete_disk, restore_disk
from gpudev.jobs import DiskJob
from gpudev.repositories import DisksRepository, ReconcilerRunsRepository
from tests.support.handlers import Ec2ListingFails, close_handler_pool, lambda_context, load_handler
from tests.support.submitters import ALICE, RecordingQueue


class RefusesToDelete:
    """moto's client, but DeleteSnapshot of `snapshot_id` answers `code`."""

    def __init__(self, ec2: Any, snapshot_id: str, code: str) -> None:
        self._ec2, self._snapshot_id, self._code = ec2, snapshot_id, code

    def delete_snapshot(self, SnapshotId: str) -> Any:
        if SnapshotId == self._snapshot_id:
            error = {"Error": {"Code": self._code, "Message": "used by ami-0123"}}
            raise ClientError(error, "DeleteSnapshot")  # type: ignore[arg-type]
        return self._ec2.delete_snapshot(SnapshotId=SnapshotId)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


@pytest.fixture
def conn(autocommit_conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    return autocommit_conn


def snapshots_of(ec2: Any, user: str, disk: str, count: int) -> list[str]:
    tags = [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}]
    volume = ec2.create_volume(AvailabilityZone="us-east-2a", Size=8)["VolumeId"]
    return [
        ec2.create_snapshot(
            VolumeId=volume, TagSpecifications=[{"ResourceType": "snapshot", "Tags": tags}]
        )["SnapshotId"]
        for _ in range(count)
    ]


def remaining(ec2: Any) -> set[str]:
    return {s["SnapshotId"] for s in list_gpudev_snapshots(ec2)}


def deleted_and_tagged(conn: Any, ec2: Any, name: str) -> date:
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name=name))  # type: ignore[arg-type]
    delete_disk(conn, jobs, ALICE, name)
    job = jobs.sent[-1]
    assert isinstance(job, DiskJob)
    DiskOperations(conn, ec2).handle(job)
    disk = DisksRepository(conn).get("alice", name)
    assert disk is not None and disk.delete_date is not None
    return disk.delete_date


def test_delete_then_tags_then_purge_on_the_date_and_not_before(conn: Any, ec2: Any):
    doomed = snapshots_of(ec2, "alice", "data", 3)
    kept = snapshots_of(ec2, "alice", "work", 1) + snapshots_of(ec2, "bob", "data", 1)
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="work"))  # type: ignore[arg-type]
    delete_date = deleted_and_tagged(conn, ec2, "data")
    assert delete_date == date.today() + timedelta(days=30)

    early = purge_disks(conn, ec2, "test", today=delete_date - timedelta(days=1))
    assert early.outcome == "succeeded" and early.statistics["due_disks"] == 0
    assert remaining(ec2) == set(doomed + kept)
    assert DisksRepository(conn).get("alice", "data") is not None

    on_time = purge_disks(conn, ec2, "test", today=delete_date)

    assert remaining(ec2) == set(kept)
    assert DisksRepository(conn).get("alice", "data") is None
    assert DisksRepository(conn).get("alice", "work") is not None
    assert on_time.statistics == {
        "due_disks": 1,
        "snapshots_found": 3,
        "snapshots_deleted": 3,
        "snapshots_not_due": 0,
        "snapshots_in_use": 0,
        "errors": 0,
        "disks_purged": 1,
        # retention: "work" is live, with its one snapshot (bob has no disk "data")
        "retained_disks": 1,
        "snapshots_retained": 1,
        "snapshots_retired": 0,
        "snapshots_sources": 0,
    }
    run = ReconcilerRunsRepository(conn).latest("disk_purge")
    assert run is not None and run.outcome == "succeeded"
    assert run.statistics["snapshots_deleted"] == 3


def test_a_snapshot_used_by_an_image_is_reported_and_keeps_its_row_until_a_later_run(
    conn: Any, ec2: Any
):
    first, second = snapshots_of(ec2, "alice", "data", 2)
    delete_date = deleted_and_tagged(conn, ec2, "data")

    blocked = purge_disks(
        conn, RefusesToDelete(ec2, first, "InvalidSnapshot.InUse"), "test", today=delete_date
    )

    assert blocked.outcome == "succeeded"
    assert blocked.statistics["snapshots_in_use"] == 1
    assert blocked.statistics["disks_purged"] == 0
    assert "InvalidSnapshot.InUse" in blocked.refused[first]
    assert remaining(ec2) == {first}
    assert DisksRepository(conn).get("alice", "data") is not None

    later = purge_disks(conn, ec2, "test", today=delete_date + timedelta(days=1))
    assert later.statistics["disks_purged"] == 1 and remaining(ec2) == set()
    assert second not in remaining(ec2)


def test_a_snapshot_tagged_for_a_later_day_is_left_with_its_row(conn: Any, ec2: Any):
    (snapshot,) = snapshots_of(ec2, "alice", "data", 1)
    delete_date = deleted_and_tagged(conn, ec2, "data")
    later = (delete_date + timedelta(days=5)).isoformat()
    ec2.create_tags(Resources=[snapshot], Tags=[{"Key": "delete-date", "Value": later}])

    result = purge_disks(conn, ec2, "test", today=delete_date)

    assert result.statistics["snapshots_not_due"] == 1 and result.statistics["disks_purged"] == 0
    assert remaining(ec2) == {snapshot}
    assert DisksRepository(conn).get("alice", "data") is not None


def test_a_restored_disk_is_never_purged(conn: Any, ec2: Any):
    snapshots = snapshots_of(ec2, "alice", "data", 2)
    delete_date = deleted_and_tagged(conn, ec2, "data")
    restore_disk(conn, RecordingQueue(), ALICE, "data")

    result = purge_disks(conn, ec2, "test", today=delete_date + timedelta(days=365))

    assert result.statistics["due_disks"] == 0
    assert remaining(ec2) == set(snapshots)


def test_a_listing_failure_records_the_run_failed_and_deletes_nothing(conn: Any, ec2: Any):
    snapshots = snapshots_of(ec2, "alice", "data", 1)
    delete_date = deleted_and_tagged(conn, ec2, "data")

    class NoListing:
        def get_paginator(self, name: str) -> Any:
            raise ClientError({"Error": {"Code": "Unavailable"}}, name)  # type: ignore[arg-type]

    with pytest.raises(ClientError):
        purge_disks(conn, NoListing(), "test", today=delete_date)

    run = ReconcilerRunsRepository(conn).latest("disk_purge")
    assert run is not None and run.outcome == "failed" and "Unavailable" in (run.error or "")
    assert remaining(ec2) == set(snapshots)
    assert DisksRepository(conn).get("alice", "data") is not None


def test_the_handler_records_a_failed_run_that_survives_the_failure(
    conn: Any, fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    """The function's connection commits each statement (autocommit_connection): one outer
    transaction would roll the `failed` run back with the work it records."""
    conn.execute(
        "INSERT INTO disks (user_id, disk_name, is_deleted, delete_date)"
        " VALUES ('alice', 'data', true, current_date - 1)"
    )
    module = load_handler("disk_purge", fresh_database, monkeypatch)
    monkeypatch.setattr(module, "aws_clients", lambda: SimpleNamespace(ec2=Ec2ListingFails()))
    try:
        with pytest.raises(ClientError):
            module.handler({}, lambda_context("gpudev-disk-purge"))
    finally:
        close_handler_pool()

    run = ReconcilerRunsRepository(conn).latest("disk_purge")
    assert run is not None and run.outcome == "failed" and "InternalError" in (run.error or "")
    assert DisksRepository(conn).get("alice", "data") is not None


# -- snapshot retention of live disks (disks/retention.py) ---------------------------------


def live_disk_with_snapshots(conn: Any, ec2: Any, name: str, count: int) -> list[str]:
    """A live disk and its snapshots, oldest first. moto's StartTime has whole seconds
    (EBS's has milliseconds): one a second, so their order is the one EBS would give."""
    create_disk(conn, RecordingQueue(), ALICE, DiskRequest(disk_name=name))  # type: ignore[arg-type]
    made = []
    for _ in range(count):
        made += snapshots_of(ec2, "alice", name, 1)
        time.sleep(1.01)
    return made


def test_retention_keeps_the_latest_n_snapshots_of_a_live_disk(conn: Any, ec2: Any):
    oldest_first = live_disk_with_snapshots(conn, ec2, "work", 5)
    others = snapshots_of(ec2, "alice", "other", 2)  # no such disk: not ours to judge

    result = purge_disks(conn, ec2, "test", today=date.today(), keep=3)

    assert remaining(ec2) == set(oldest_first[2:] + others)
    assert result.statistics["snapshots_retired"] == 2
    assert result.statistics["snapshots_deleted"] == 0, "the purge's own count is apart"
    again = purge_disks(conn, ec2, "test", today=date.today(), keep=3)
    assert again.statistics["snapshots_retired"] == 0 and remaining(ec2) == set(
        oldest_first[2:] + others
    )


def test_retention_never_deletes_the_snapshot_a_volume_is_restored_from(conn: Any, ec2: Any):
    oldest_first = live_disk_with_snapshots(conn, ec2, "work", 4)
    ec2.create_volume(
        AvailabilityZone="us-east-2a",
        SnapshotId=oldest_first[0],
        TagSpecifications=[
            {"ResourceType": "volume", "Tags": [{"Key": "gpu-dev-user", "Value": "alice"}]}
        ],
    )

    result = purge_disks(conn, ec2, "test", today=date.today(), keep=1)

    assert remaining(ec2) == {oldest_first[0], oldest_first[-1]}
    assert result.statistics["snapshots_sources"] == 1
    assert result.statistics["snapshots_retired"] == 2


def test_a_retired_snapshot_ebs_refuses_is_reported_and_tried_again(conn: Any, ec2: Any):
    oldest_first = live_disk_with_snapshots(conn, ec2, "work", 3)

    refused = purge_disks(
        conn,
        RefusesToDelete(ec2, oldest_first[0], "InvalidSnapshot.InUse"),
        "test",
        today=date.today(),
        keep=1,
    )

    assert refused.outcome == "succeeded"
    assert "InvalidSnapshot.InUse" in refused.refused[oldest_first[0]]
    assert refused.statistics["snapshots_retired"] == 1
    assert remaining(ec2) == {oldest_first[0], oldest_first[-1]}
    later = purge_disks(conn, ec2, "test", today=date.today(), keep=1)
    assert later.statistics["snapshots_retired"] == 1 and remaining(ec2) == {oldest_first[-1]}
