"""`gpu-dev disk clone SRC DST` (gpudev/disks/requests.py `clone_disk`, gpudev/disks/clone.py)
against real PostgreSQL and moto's EC2: a clone is recorded with its job like any disk
request, every refusal leaves no row and no job, and the job copies SRC's latest completed
snapshot as DST's, which DST's first volume is made from even after SRC is deleted and its
snapshots purged."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from gpudev.disks.clone import CLONED_BY_TAG, CloneNotReady
from gpudev.disks.ebs import tags_of
from gpudev.disks.operations import DiskOperations
from gpudev.disks.requests import (
    DiskRequest,
    RenameRequest,
    clone_disk,
    create_disk,
    delete_disk,
    rename_disk,
)
from gpudev.disks.schemas import CloneRequest
from gpudev.disks.volumes import DiskRef, DiskVolumes
from gpudev.errors import Conflict, DiskNameTaken, Gone, InvalidRequest, NotFound
from gpudev.jobs import DiskJob
from gpudev.models import Disk
from gpudev.repositories import DisksRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from tests.support.submitters import ALICE, BOB, RecordingQueue


@pytest.fixture
def conn(autocommit_conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    return autocommit_conn


def _snapshot_tags(user: str, disk: str) -> list[dict[str, Any]]:
    tags = [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}]
    return [{"ResourceType": "snapshot", "Tags": tags}]


def snapshotted(conn: psycopg.Connection[Any], ec2: Any, user: str, name: str) -> list[str]:
    """A disk of `user` with two completed snapshots (of an 8 GB then a 16 GB volume),
    recorded as the lifecycle records them; their ids, oldest first."""
    caller = {"alice": ALICE, "bob": BOB}[user]
    create_disk(conn, RecordingQueue(), caller, DiskRequest(disk_name=name))  # type: ignore[arg-type]
    ids = []
    for size in (8, 16):
        volume = ec2.create_volume(AvailabilityZone="us-east-2a", Size=size)["VolumeId"]
        tags = _snapshot_tags(user, name)
        ids.append(ec2.create_snapshot(VolumeId=volume, TagSpecifications=tags)["SnapshotId"])
    # moto stamps both in the same second: the first is an hour older, as between two ends
    backend = ec2_backends[DEFAULT_ACCOUNT_ID]["us-east-2"]
    backend.snapshots[ids[0]].start_time -= timedelta(hours=1)
    conn.execute(
        "UPDATE disks SET snapshot_count = 2, last_snapshot_at = now(), "
        "operation_status = 'completed' WHERE user_id = %s AND disk_name = %s",
        (user, name),
    )
    return ids


def rows(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    listed = conn.execute("SELECT user_id, disk_name FROM disks ORDER BY 1, 2")
    return [(r[0], r[1]) for r in listed]


def outbox(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM outbox").fetchone()
    return int(row[0]) if row else 0


def disk(conn: psycopg.Connection[Any], name: str) -> Disk:
    found = DisksRepository(conn).get("alice", name)
    assert found is not None
    return found


def clone(conn: psycopg.Connection[Any], queue: RecordingQueue, src: str, dst: str) -> Disk:
    return clone_disk(conn, queue, ALICE, src, CloneRequest(new_name=dst))


def test_a_clone_is_recorded_with_its_job_sized_as_its_source(conn: Any, ec2: Any):
    snapshotted(conn, ec2, "alice", "work")
    conn.execute("UPDATE disks SET size_gb = 200 WHERE disk_name = 'work'")
    queue = RecordingQueue()

    made = clone(conn, queue, "work", "copy")

    source = disk(conn, "work")
    assert (made.disk_name, made.size_gb, made.cloned_from) == ("copy", 200, source.disk_id)
    assert made.operation_status == "requested"
    job = queue.last
    assert isinstance(job, DiskJob)
    assert (job.operation, job.disk_id, job.previous_name) == ("clone", made.disk_id, "work")
    assert outbox(conn) == 0  # sent after commit, its row deleted


@pytest.mark.parametrize(
    ("src", "dst", "error", "says"),
    [
        ("fresh", "copy", Conflict, "has no completed snapshot yet"),
        ("work", "taken", DiskNameTaken, "already have a disk"),
        ("work", "bad name!", InvalidRequest, "disk name"),
        ("missing", "copy", NotFound, "no disk named"),
        ("bobs", "copy", NotFound, "no disk named"),  # another user's disk is never found
        ("gone", "copy", Gone, "marked for deletion"),
    ],
)
def test_a_refused_clone_says_why_and_writes_nothing(
    conn: Any, ec2: Any, src: str, dst: str, error: type[Exception], says: str
):
    snapshotted(conn, ec2, "alice", "work")
    snapshotted(conn, ec2, "alice", "gone")
    snapshotted(conn, ec2, "bob", "bobs")
    create_disk(conn, RecordingQueue(), ALICE, DiskRequest(disk_name="fresh"))  # type: ignore[arg-type]
    create_disk(conn, RecordingQueue(), ALICE, DiskRequest(disk_name="taken"))  # type: ignore[arg-type]
    delete_disk(conn, RecordingQueue(), ALICE, "gone")
    conn.execute("DELETE FROM outbox")
    before = rows(conn)
    queue = RecordingQueue()

    with pytest.raises(error, match=says):
        clone_disk(conn, queue, ALICE, src, CloneRequest.model_construct(new_name=dst))

    assert rows(conn) == before
    assert outbox(conn) == 0 and queue.sent == []


def test_the_job_copies_the_latest_snapshot_as_the_clones_once(conn: Any, ec2: Any):
    old = snapshotted(conn, ec2, "alice", "work")
    queue = RecordingQueue()
    made = clone(conn, queue, "work", "copy")

    assert DiskOperations(conn, ec2).handle(queue.last) == "clone done"
    assert DiskOperations(conn, ec2).handle(queue.last) == "already done"

    copies = ec2.describe_snapshots(
        Filters=[{"Name": f"tag:{CLONED_BY_TAG}", "Values": [str(made.disk_id)]}]
    )["Snapshots"]
    assert len(copies) == 1
    tags = tags_of(copies[0])
    assert (tags["gpu-dev-user"], tags["disk_name"]) == ("alice", "copy")
    assert copies[0]["SnapshotId"] not in old
    assert copies[0]["VolumeSize"] == 16  # a copy of the latest (16 GB), not the older 8 GB
    assert disk(conn, "copy").operation_status == "completed"


def test_the_clones_first_volume_is_made_from_its_copy_after_the_source_is_purged(
    conn: Any, ec2: Any
):
    old = snapshotted(conn, ec2, "alice", "work")
    queue = RecordingQueue()
    made = clone(conn, queue, "work", "copy")
    DiskOperations(conn, ec2).handle(queue.last)
    # SRC deleted and purged: its snapshots and its row go.
    delete_disk(conn, RecordingQueue(), ALICE, "work")
    for snapshot in old:
        ec2.delete_snapshot(SnapshotId=snapshot)
    conn.execute("DELETE FROM disks WHERE disk_name = 'work'")

    ref = DiskRef("alice", "copy", reservation_id=made.disk_id)
    volume = DiskVolumes(ec2).create_volume(ref, "us-east-2a", made.size_gb)

    copy = DiskVolumes(ec2).latest_snapshot(ref)
    assert copy is not None and copy["SnapshotId"] not in old
    assert volume["SnapshotId"] == copy["SnapshotId"]


def test_a_rename_before_the_clone_job_still_copies(conn: Any, ec2: Any):
    snapshotted(conn, ec2, "alice", "work")
    queue = RecordingQueue()
    clone(conn, queue, "work", "copy")
    clone_job = queue.last
    rename_disk(conn, queue, ALICE, "copy", RenameRequest(new_name="renamed"))  # type: ignore[arg-type]

    assert DiskOperations(conn, ec2).handle(clone_job).startswith("stale")
    assert DiskOperations(conn, ec2).handle(queue.last) == "rename done"

    ref = DiskRef("alice", "renamed", reservation_id=disk(conn, "renamed").disk_id)
    assert DiskVolumes(ec2).latest_snapshot(ref) is not None


class PendingCopies:
    """moto's client, but every snapshot copied is listed as pending (moto completes them at
    once)."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2

    def describe_snapshots(self, **kwargs: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._ec2.describe_snapshots(**kwargs)
        for snapshot in answer["Snapshots"]:
            if CLONED_BY_TAG in tags_of(snapshot):
                snapshot["State"] = "pending"
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


def test_while_the_copy_is_pending_the_job_is_retried_and_reservations_wait(conn: Any, ec2: Any):
    snapshotted(conn, ec2, "alice", "work")
    queue = RecordingQueue()
    clone(conn, queue, "work", "copy")

    with pytest.raises(CloneNotReady):
        DiskOperations(conn, PendingCopies(ec2)).handle(queue.last)
    with pytest.raises(CloneNotReady):  # delivered again: no second copy
        DiskOperations(conn, PendingCopies(ec2)).handle(queue.last)

    assert disk(conn, "copy").operation_status == "running"
    copies = ec2.describe_snapshots(Filters=[{"Name": "tag-key", "Values": [CLONED_BY_TAG]}])
    assert len(copies["Snapshots"]) == 1
    request = ReservationRequest(
        gpu_type="t4", gpu_count=1, hours=1, github_user="octocat", disk_name="copy"
    )
    with pytest.raises(Conflict, match="still being cloned"):
        submit_reservation(conn, RecordingQueue(), ALICE, request)

    assert DiskOperations(conn, ec2).handle(queue.last) == "clone done"


def test_a_clone_whose_source_lost_its_snapshots_fails_with_a_sentence(conn: Any, ec2: Any):
    old = snapshotted(conn, ec2, "alice", "work")
    queue = RecordingQueue()
    clone(conn, queue, "work", "copy")
    for snapshot in old:
        ec2.delete_snapshot(SnapshotId=snapshot)

    assert DiskOperations(conn, ec2).handle(queue.last).startswith("clone failed")

    failed = disk(conn, "copy")
    assert failed.operation_status == "failed"
    assert "no completed snapshot" in (failed.operation_error or "")
