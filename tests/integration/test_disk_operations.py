"""Disk jobs as the jobs consumer runs them (gpudev/disks/operations.py), against real
PostgreSQL and moto's EC2: each operation makes the EBS tags of the disk's volumes and
snapshots agree with its committed row; a duplicate job changes nothing, a stale one does
nothing, a refusal by EBS is visible on the row and the job is retried."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from botocore.exceptions import ClientError

from gpudev.disks.ebs import list_gpudev_snapshots, list_gpudev_volumes
from gpudev.disks.operations import DiskOperationFailed, DiskOperations
from gpudev.disks.requests import (
    DiskRequest,
    RenameRequest,
    create_disk,
    delete_disk,
    rename_disk,
    restore_disk,
)
from gpudev.models import Disk
from gpudev.repositories import DisksRepository
from tests.support.submitters import ALICE, RecordingQueue


class FailingEc2:
    """moto's client, but the named operation is refused the next `times` calls."""

    def __init__(self, ec2: Any, operation: str, times: int = 1) -> None:
        self._ec2, self._operation, self.times = ec2, operation, times

    def __getattr__(self, name: str) -> Any:
        if name == self._operation and self.times > 0:
            self.times -= 1
            error = {"Error": {"Code": "RequestLimitExceeded", "Message": "slow down"}}
            return lambda **_: (_ for _ in ()).throw(ClientError(error, name))  # type: ignore[arg-type]
        return getattr(self._ec2, name)


@pytest.fixture
def conn(autocommit_conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    return autocommit_conn


def _tags(user: str, disk: str, kind: str) -> list[dict[str, Any]]:
    tags = [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}]
    if kind == "volume":
        tags.append({"Key": "Name", "Value": f"gpu-dev-disk-{user}-{disk}"})
    return [{"ResourceType": kind, "Tags": tags}]


def volume_with_snapshots(ec2: Any, user: str, disk: str, snapshots: int = 2) -> dict[str, Any]:
    volume = ec2.create_volume(
        AvailabilityZone="us-east-2a", Size=8, TagSpecifications=_tags(user, disk, "volume")
    )["VolumeId"]
    ids = [
        ec2.create_snapshot(VolumeId=volume, TagSpecifications=_tags(user, disk, "snapshot"))[
            "SnapshotId"
        ]
        for _ in range(snapshots)
    ]
    return {"volume": volume, "snapshots": ids}


def tags(ec2: Any, resource: str) -> dict[str, str]:
    if resource.startswith("vol-"):
        raw = ec2.describe_volumes(VolumeIds=[resource])["Volumes"][0]
    else:
        raw = ec2.describe_snapshots(SnapshotIds=[resource])["Snapshots"][0]
    return {t["Key"]: t["Value"] for t in raw.get("Tags", [])}


def disk(conn: psycopg.Connection[Any], name: str) -> Disk:
    found = DisksRepository(conn).get("alice", name)
    assert found is not None
    return found


def test_a_create_job_completes_its_operation_and_touches_nothing_in_ebs(conn: Any, ec2: Any):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    assert disk(conn, "data").operation_status == "requested"

    assert DiskOperations(conn, ec2).handle(jobs.last) == "create done"

    assert disk(conn, "data").operation_status == "completed"
    assert list_gpudev_snapshots(ec2) == [] and list_gpudev_volumes(ec2) == []
    assert DiskOperations(conn, ec2).handle(jobs.last) == "already done"


def test_delete_tags_every_snapshot_of_the_disk_with_its_date_and_nothing_else(conn: Any, ec2: Any):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "data", snapshots=3)
    other_disk = volume_with_snapshots(ec2, "alice", "other", snapshots=1)
    bobs = volume_with_snapshots(ec2, "bob", "data", snapshots=1)
    delete_disk(conn, jobs, ALICE, "data")
    deleted = disk(conn, "data")

    assert DiskOperations(conn, ec2).handle(jobs.last) == "delete done"

    assert deleted.delete_date is not None
    for snapshot in mine["snapshots"]:
        assert tags(ec2, snapshot)["delete-date"] == deleted.delete_date.isoformat()
        assert "marked-deleted-at" in tags(ec2, snapshot)
    for snapshot in other_disk["snapshots"] + bobs["snapshots"]:
        assert "delete-date" not in tags(ec2, snapshot)
    assert "delete-date" not in tags(ec2, mine["volume"])  # snapshots only
    assert disk(conn, "data").operation_status == "completed"


def test_a_duplicate_delete_job_changes_nothing(conn: Any, ec2: Any):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "data")
    delete_disk(conn, jobs, ALICE, "data")
    DiskOperations(conn, ec2).handle(jobs.last)
    before = [tags(ec2, s) for s in mine["snapshots"]]
    done = disk(conn, "data")

    assert DiskOperations(conn, ec2).handle(jobs.last) == "already done"

    assert [tags(ec2, s) for s in mine["snapshots"]] == before
    assert disk(conn, "data").last_updated == done.last_updated


def test_rename_moves_the_name_tags_of_volumes_and_snapshots(conn: Any, ec2: Any):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "data")
    rename_disk(conn, jobs, ALICE, "data", RenameRequest(new_name="work"))  # type: ignore[arg-type]
    assert disk(conn, "work").tagged_name == "data"

    assert DiskOperations(conn, ec2).handle(jobs.last) == "rename done"

    for resource in [mine["volume"], *mine["snapshots"]]:
        assert tags(ec2, resource)["disk_name"] == "work"
        assert tags(ec2, resource)["gpu-dev-user"] == "alice"
    assert tags(ec2, mine["volume"])["Name"] == "gpu-dev-disk-alice-work"
    renamed = disk(conn, "work")
    assert renamed.tagged_name is None and renamed.operation_status == "completed"


def test_a_stale_rename_job_does_nothing_and_the_newest_job_renames_from_the_tagged_name(
    conn: Any, ec2: Any
):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="a"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "a", snapshots=1)
    rename_disk(conn, jobs, ALICE, "a", RenameRequest(new_name="b"))  # type: ignore[arg-type]
    first = jobs.last
    rename_disk(conn, jobs, ALICE, "b", RenameRequest(new_name="c"))  # type: ignore[arg-type]
    second = jobs.last
    assert disk(conn, "c").tagged_name == "a"  # the tags still say a

    assert DiskOperations(conn, ec2).handle(first).startswith("stale")
    assert tags(ec2, mine["snapshots"][0])["disk_name"] == "a"
    assert disk(conn, "c").operation_status == "requested"

    assert DiskOperations(conn, ec2).handle(second) == "rename done"
    assert tags(ec2, mine["snapshots"][0])["disk_name"] == "c"
    assert tags(ec2, mine["volume"])["disk_name"] == "c"
    assert disk(conn, "c").tagged_name is None


def test_restore_removes_the_deletion_tags_and_a_late_delete_job_does_not_put_them_back(
    conn: Any, ec2: Any
):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "data")
    delete_disk(conn, jobs, ALICE, "data")
    delete_job = jobs.last
    DiskOperations(conn, ec2).handle(delete_job)
    restored = restore_disk(conn, jobs, ALICE, "data")
    assert not restored.is_deleted and restored.delete_date is None

    assert DiskOperations(conn, ec2).handle(jobs.last) == "restore done"
    assert DiskOperations(conn, ec2).handle(delete_job).startswith("stale")

    for snapshot in mine["snapshots"]:
        assert "delete-date" not in tags(ec2, snapshot)
        assert "marked-deleted-at" not in tags(ec2, snapshot)
    assert disk(conn, "data").operation_status == "completed"


def test_a_refusal_by_ebs_is_recorded_with_its_reason_and_the_retried_job_completes(
    conn: Any, ec2: Any
):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    mine = volume_with_snapshots(ec2, "alice", "data", snapshots=1)
    delete_disk(conn, jobs, ALICE, "data")

    with pytest.raises(DiskOperationFailed):
        DiskOperations(conn, FailingEc2(ec2, "create_tags")).handle(jobs.last)

    failed = disk(conn, "data")
    assert failed.operation_status == "failed"
    assert failed.operation_error is not None and "RequestLimitExceeded" in failed.operation_error
    assert "delete-date" not in tags(ec2, mine["snapshots"][0])

    assert DiskOperations(conn, ec2).handle(jobs.last) == "delete done"  # the retry
    done = disk(conn, "data")
    assert done.operation_status == "completed" and done.operation_error is None
    assert "delete-date" in tags(ec2, mine["snapshots"][0])


def test_a_job_for_a_disk_that_is_gone_does_nothing(conn: Any, ec2: Any):
    jobs = RecordingQueue()
    create_disk(conn, jobs, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    conn.execute("DELETE FROM disks")

    assert DiskOperations(conn, ec2).handle(jobs.last) == "no such disk: nothing to do"


def test_the_service_refuses_a_connection_that_would_hold_a_transaction_open(
    fresh_database: str, ec2: Any
):
    with psycopg.connect(fresh_database) as conn, pytest.raises(ValueError):
        DiskOperations(conn, ec2)
