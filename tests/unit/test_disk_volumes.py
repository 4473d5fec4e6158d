"""A held disk's EBS side (gpudev/disks/volumes.py) against moto: previous snapshots are
found by either name tag (the reference's `disk_name`, older `disk-name`) and by the name
the tags still carry after a rename; everything made is tagged with the one vocabulary of
gpudev/disks/ebs.py; the volume is created with the reservation id as ClientToken, and a
recorded volume id is the volume every later step acts on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpudev.disks.ebs import disk_name_of, name_tag, tags_of
from gpudev.disks.volumes import DiskRef, DiskVolumes

ZONE = "us-east-2a"


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-2")


def _snapshot(ec2: Any, tags: dict[str, str], size: int = 8) -> str:
    volume = ec2.create_volume(AvailabilityZone=ZONE, Size=size, VolumeType="gp3")
    snapshot = ec2.create_snapshot(
        VolumeId=volume["VolumeId"],
        TagSpecifications=[
            {"ResourceType": "snapshot", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )
    return str(snapshot["SnapshotId"])


@pytest.mark.parametrize("key", ["disk_name", "disk-name"])
def test_a_disk_whose_snapshot_carries_either_name_tag_is_mounted_from_it(ec2: Any, key: str):
    snapshot_id = _snapshot(ec2, {"gpu-dev-user": "alice", key: "work"}, size=20)
    _snapshot(ec2, {"gpu-dev-user": "bob", key: "work"})  # another user's: never
    ref = DiskRef("alice", "work", uuid.uuid4())

    created = DiskVolumes(ec2).create_volume(ref, ZONE, 10)

    assert created["SnapshotId"] == snapshot_id and created["Size"] == 20


def test_a_renamed_disk_whose_tags_still_carry_the_old_name_is_mounted_from_its_snapshot(
    ec2: Any,
):
    snapshot_id = _snapshot(ec2, {"gpu-dev-user": "alice", "disk_name": "data"})
    ref = DiskRef("alice", "work", uuid.uuid4(), tagged_name="data")

    assert DiskVolumes(ec2).create_volume(ref, ZONE, None)["SnapshotId"] == snapshot_id
    assert DiskVolumes(ec2).latest_snapshot(DiskRef("alice", "work", uuid.uuid4())) is None


def test_everything_made_carries_the_reference_tags_and_one_name_format(ec2: Any):
    ref = DiskRef("alice", "work", uuid.uuid4())
    volumes = DiskVolumes(ec2)
    volume = volumes.create_volume(ref, ZONE, None)
    snapshot = volumes.create_snapshot(ref, volume["VolumeId"])

    for made in (volume, snapshot):
        tags = tags_of(made)
        assert tags == {
            "gpu-dev-user": "alice",
            "disk_name": "work",
            "reservation-id": str(ref.reservation_id),
            "Name": name_tag("alice", "work"),
        }
        assert disk_name_of(tags) == "work"


def test_the_volume_is_created_with_the_reservation_id_as_client_token(ec2: Any):
    sent: list[dict[str, Any]] = []
    ec2.meta.events.register(
        "provide-client-params.ec2.CreateVolume", lambda params, **_: sent.append(params)
    )
    ref = DiskRef("alice", "work", uuid.uuid4())
    DiskVolumes(ec2).create_volume(ref, ZONE, None)
    assert sent[0]["ClientToken"] == str(ref.reservation_id)


def test_a_recorded_volume_is_the_one_acted_on_not_the_first_listed(ec2: Any):
    """Two volumes tagged with the reservation (a retried create EC2 did not deduplicate):
    the one recorded on the disk's row is found, and its snapshot only."""
    rid = uuid.uuid4()
    volumes = DiskVolumes(ec2)
    first = volumes.create_volume(DiskRef("alice", "work", rid), ZONE, None)
    second = volumes.create_volume(DiskRef("alice", "work", rid), ZONE, None)
    recorded = DiskRef("alice", "work", rid, volume_id=second["VolumeId"])

    found = volumes.volume(recorded)
    assert found is not None and found["VolumeId"] == second["VolumeId"]
    volumes.create_snapshot(recorded, first["VolumeId"])
    assert volumes.snapshot(recorded, second["VolumeId"]) is None

    volumes.delete_volume(second["VolumeId"])
    assert volumes.volume(recorded) is None
