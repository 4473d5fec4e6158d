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


class _TokenAlreadyUsed:
    """moto's client, but CreateVolume answers as EC2 does to a ClientToken reused with other
    parameters (moto ignores ClientToken)."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2

    def create_volume(self, **_: Any) -> Any:
        from botocore.exceptions import ClientError

        error = {
            "Code": "IdempotentParameterMismatch",
            "Message": "The client token you have provided is associated with a resource that"
            " is already deleted or has different parameters.",
        }
        raise ClientError({"Error": error}, "CreateVolume")  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


def test_a_client_token_reused_with_other_parameters_returns_the_volume_already_made(ec2: Any):
    ref = DiskRef("alice", "work", uuid.uuid4())
    made = DiskVolumes(ec2).create_volume(ref, ZONE, None)  # the first try

    again = DiskVolumes(_TokenAlreadyUsed(ec2)).create_volume(ref, "us-east-2b", 2048)

    assert again["VolumeId"] == made["VolumeId"]
    assert len(ec2.describe_volumes()["Volumes"]) == 1


def test_a_client_token_reused_before_its_volume_is_listed_says_so_and_makes_nothing(ec2: Any):
    from gpudev.disks.volumes import VolumeTokenMismatch

    ref = DiskRef("alice", "work", uuid.uuid4())
    with pytest.raises(VolumeTokenMismatch, match=f"for reservation {ref.reservation_id}") as error:
        DiskVolumes(_TokenAlreadyUsed(ec2)).create_volume(ref, ZONE, None)
    assert "1024 GB in us-east-2a from no snapshot" in str(error.value)
    assert "tried again" in str(error.value)
    assert ec2.describe_volumes()["Volumes"] == []


class _VolumeInError:
    """moto's client, but `volume_id` reads as EBS reports a volume it could not create
    (moto's volumes never fail)."""

    def __init__(self, ec2: Any, volume_id: str) -> None:
        self._ec2, self._volume_id = ec2, volume_id

    def describe_volumes(self, **kwargs: Any) -> Any:
        answer = self._ec2.describe_volumes(**kwargs)
        for volume in answer["Volumes"]:
            if volume["VolumeId"] == self._volume_id:
                volume["State"] = "error"
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


def test_a_volume_in_error_is_still_the_reservations_to_delete(ec2: Any):
    """A volume in `error` is found (so freeing the disk deletes it) rather than taken for
    no volume at all, which would leak it."""
    rid = uuid.uuid4()
    made = DiskVolumes(ec2).create_volume(DiskRef("alice", "work", rid), ZONE, None)
    volumes = DiskVolumes(_VolumeInError(ec2, made["VolumeId"]))
    recorded = DiskRef("alice", "work", rid, volume_id=made["VolumeId"])

    found = volumes.volume(recorded)
    assert found is not None and found["State"] == "error"
    volumes.delete_volume(made["VolumeId"])
    assert volumes.volume(recorded) is None


def _existing(ec2: Any, user: str = "alice", name: str = "work", zone: str = ZONE) -> str:
    """A disk's volume as the system this one replaces left it: tagged with its owner and
    name, never a reservation."""
    volume = ec2.create_volume(
        AvailabilityZone=zone,
        Size=2048,
        VolumeType="gp3",
        TagSpecifications=[
            {
                "ResourceType": "volume",
                "Tags": [
                    {"Key": "gpu-dev-user", "Value": user},
                    {"Key": "disk_name", "Value": name},
                ],
            }
        ],
    )
    return str(volume["VolumeId"])


def test_an_imported_volume_without_snapshots_holds_the_disks_data(ec2: Any):
    volume_id = _existing(ec2)
    _existing(ec2, user="bob")  # another user's disk of the same name: never
    volumes = DiskVolumes(ec2)

    current = volumes.current(DiskRef("alice", "work", uuid.uuid4()), recorded=None)

    assert current is not None and current["VolumeId"] == volume_id


def test_a_volume_whose_newest_snapshot_is_of_itself_holds_the_disks_data(ec2: Any):
    volume_id = _existing(ec2)
    ec2.create_snapshot(
        VolumeId=volume_id,
        TagSpecifications=[
            {
                "ResourceType": "snapshot",
                "Tags": [
                    {"Key": "gpu-dev-user", "Value": "alice"},
                    {"Key": "disk_name", "Value": "work"},
                ],
            }
        ],
    )
    current = DiskVolumes(ec2).current(DiskRef("alice", "work", uuid.uuid4()), recorded=None)
    assert current is not None and current["VolumeId"] == volume_id


def test_a_volume_older_than_the_newest_snapshot_of_another_volume_is_not_the_disks_data(
    ec2: Any,
):
    _existing(ec2)
    _snapshot(ec2, {"gpu-dev-user": "alice", "disk_name": "work"})  # of a later volume
    assert DiskVolumes(ec2).current(DiskRef("alice", "work", uuid.uuid4()), recorded=None) is None


def test_of_several_volumes_the_recorded_one_is_the_disks_else_the_newest(ec2: Any):
    first = _existing(ec2)
    second = _existing(ec2)
    volumes = DiskVolumes(ec2)
    ref = DiskRef("alice", "work", uuid.uuid4())

    assert volumes.current(ref, recorded=first)["VolumeId"] == first  # type: ignore[index]
    assert volumes.current(ref, recorded=second)["VolumeId"] == second  # type: ignore[index]
    # Without a recorded one, the newest (`volume_rank`, tests/unit/test_disk_plan.py): moto's
    # CreateTime has whole seconds, so here both may be as new.
    assert volumes.current(ref, recorded=None)["VolumeId"] in {first, second}  # type: ignore[index]


def test_an_adopted_volume_is_listed_as_adopted_and_never_as_one_the_reservation_made(ec2: Any):
    volume_id = _existing(ec2)
    ref = DiskRef("alice", "work", uuid.uuid4())
    volumes = DiskVolumes(ec2)

    volumes.adopt(ref, volume_id)

    assert volumes.volume(ref) is None, "not a volume made for the reservation"
    assert [v["VolumeId"] for v in volumes.adopted(ref)] == [volume_id]
    assert tags_of(ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]) == {
        "gpu-dev-user": "alice",
        "disk_name": "work",
        "reservation-id": str(ref.reservation_id),
        "gpu-dev-adopted-by": str(ref.reservation_id),
    }
    assert volumes.adopted(DiskRef("alice", "work", uuid.uuid4())) == []
