"""The snapshot-completion knob at the moto boundary: snapshots created through EC2 stay
`pending` for the delay (progress below 100%), then complete; moto's preloaded AMI
snapshots are untouched; uninstalling restores moto. Also guards the seam: if moto moves
`Snapshot.status` or renames the methods we wrap, these fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.ec2.models.elastic_block_store import EBSBackend, Snapshot

from localcloud.snapshot_completion import SnapshotCompletion
from tests.support.waiting import wait_for

TAG = [{"ResourceType": "snapshot", "Tags": [{"Key": "gpu-dev-user", "Value": "alice"}]}]
OURS = [{"Name": "tag:gpu-dev-user", "Values": ["alice"]}]


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-2")


def _snapshot(ec2: Any) -> dict[str, Any]:
    volume = ec2.create_volume(AvailabilityZone="us-east-2a", Size=8, VolumeType="gp3")
    snapshot: dict[str, Any] = ec2.create_snapshot(
        VolumeId=volume["VolumeId"], TagSpecifications=TAG
    )
    return snapshot


def _states(ec2: Any) -> list[tuple[str, str]]:
    return [(s["State"], s["Progress"]) for s in ec2.describe_snapshots(Filters=OURS)["Snapshots"]]


def test_moto_completes_snapshots_at_once_without_the_knob(ec2):
    assert _snapshot(ec2)["State"] == "completed"


def test_new_snapshots_stay_pending_for_the_delay_then_complete(ec2):
    # long enough that a loaded machine still reads them pending; completion is waited for
    completion = SnapshotCompletion(delay_seconds=5.0)
    uninstall = completion.install()
    try:
        created = _snapshot(ec2)
        assert created["State"] == "pending"
        [(state, progress)] = _states(ec2)
        assert state == "pending" and int(progress.rstrip("%")) < 100
        pending = ec2.describe_snapshots(Filters=[{"Name": "status", "Values": ["pending"]}])
        assert [s["SnapshotId"] for s in pending["Snapshots"]] == [created["SnapshotId"]]
        copied = ec2.copy_snapshot(SourceSnapshotId=created["SnapshotId"], SourceRegion="us-east-2")
        assert (
            ec2.describe_snapshots(SnapshotIds=[copied["SnapshotId"]])["Snapshots"][0]["State"]
            == "pending"
        )
        wait_for(lambda: _states(ec2) == [("completed", "100%")], message="completed")
        ec2.get_waiter("snapshot_completed").wait(
            SnapshotIds=[copied["SnapshotId"]], WaiterConfig={"Delay": 1}
        )
        completion.delay_seconds = 0  # applies to snapshots created from now on
        assert _snapshot(ec2)["State"] == "completed"
    finally:
        uninstall()
    assert "status" not in Snapshot.__dict__
    assert _states(ec2) == [("completed", "100%"), ("completed", "100%")]  # moto's own again


def test_the_seam_is_where_we_patch():
    assert "progress" in Snapshot.__dict__ and "status" not in Snapshot.__dict__
    assert callable(EBSBackend.create_snapshot) and callable(EBSBackend.copy_snapshot)
