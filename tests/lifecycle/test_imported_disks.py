"""Disks imported from the system this one replaces (issue #28): a disk whose data is on an
existing EBS volume, with no snapshot newer than it, is taken from that volume, never from
an empty one. Available in node 0's zone, the volume is attached as it is; elsewhere it is
snapshotted first and the reservation's volume made from that snapshot, and only then is
the old volume deleted. A copy that fails half-way, or a reservation cancelled during it,
leaves the volume as it was and nothing else. Each completed snapshot is on the disk's
figures as soon as it completes, not when the reconciler next sees a volume."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from gpudev.cluster.home_listing import LISTING_MARKER
from localcloud.seed import ClusterDescription
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.lifecycle.test_disks import failing_snapshots, slow_snapshots  # noqa: F401
from tests.support.waiting import wait_for

LISTING = "f 9 datasets/train.csv\n"


def _ec2(cloud: Any) -> Any:
    return cloud.aws.client("ec2")


def _cpu_zone(cloud: Any) -> str:
    """The zone of the one cpu-x86 node (localcloud/cluster.json)."""
    zones = {
        n["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for n in cloud.kubernetes.store.list("nodes", None, "GpuType=cpu-x86")["items"]
    }
    (zone,) = zones
    return str(zone)


def _other_zone(cloud: Any) -> str:
    zones = ClusterDescription.load(cloud.options.cluster_description).availability_zones
    return next(z for z in zones if z != _cpu_zone(cloud))


def _reconcile(cloud: Any) -> dict[str, Any]:
    """One run of the EBS disk reconciler (again while the scheduled one holds its lock)."""

    def run() -> dict[str, Any] | None:
        invocation = cloud.lambdas.invoke("DiskReconciler", {})
        assert not invocation.errored, invocation.payload
        return None if invocation.payload["outcome"] == "skipped" else dict(invocation.payload)

    return wait_for(run, timeout=10, message="a disk reconciliation run")


def _disk_row(cloud: Any, name: str) -> dict[str, Any]:
    with psycopg.connect(cloud.database_url) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT ebs_volume_id, reservation_id, held_volume_id, snapshot_count,"
            " last_snapshot_at, is_backing_up, size_gb FROM disks"
            " WHERE user_id = 'alice' AND disk_name = %s",
            (name,),
        )
        row = cur.fetchone()
        assert row is not None and cur.description is not None
        return {c.name: v for c, v in zip(cur.description, row, strict=True)}


@pytest.fixture
def imported(local_cloud: Any) -> Callable[[str], tuple[str, str]]:
    """A volume with data as the old system left it (its owner and name tags, no snapshot)
    in `zone`, imported by the EBS disk reconciler: (disk name, volume id)."""

    def make(zone: str) -> tuple[str, str]:
        with psycopg.connect(local_cloud.database_url) as conn:
            conn.execute(
                "INSERT INTO users (username, principal_arn) VALUES"
                " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
            )
        name = f"datasets-{uuid.uuid4().hex[:6]}"
        volume = _ec2(local_cloud).create_volume(
            AvailabilityZone=zone,
            Size=2048,
            VolumeType="gp3",
            TagSpecifications=[
                {
                    "ResourceType": "volume",
                    "Tags": [
                        {"Key": "gpu-dev-user", "Value": "alice"},
                        {"Key": "disk_name", "Value": name},
                    ],
                }
            ],
        )
        volume_id = volume["VolumeId"]
        local_cloud.cluster.storage.contents[volume_id] = LISTING_MARKER + LISTING
        _reconcile(local_cloud)
        assert _disk_row(local_cloud, name)["ebs_volume_id"] == volume_id
        return name, volume_id

    return make


def _volume(cloud: Any, volume_id: str) -> dict[str, Any] | None:
    volumes = _ec2(cloud).describe_volumes(Filters=[{"Name": "volume-id", "Values": [volume_id]}])[
        "Volumes"
    ]
    return volumes[0] if volumes else None


def _snapshots(cloud: Any, name: str) -> list[dict[str, Any]]:
    return _ec2(cloud).describe_snapshots(
        OwnerIds=["self"], Filters=[{"Name": "tag:disk_name", "Values": [name]}]
    )["Snapshots"]


def _duplicates(cloud: Any, name: str) -> list[dict[str, Any]]:
    return [d for d in _reconcile(cloud)["duplicates"] if d["disk_name"] == name]


def _free(cloud: Any, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (row := _disk_row(cloud, name))["reservation_id"] is None and row,
        timeout=30,
        message=f"disk {name} freed",
    )


def test_an_imported_volume_with_data_and_no_snapshot_is_mounted_by_the_first_reservation(
    api, local_cloud, imported
):
    name, volume_id = imported(_cpu_zone(local_cloud))

    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for_status(api, rid, "active")

    assert show(api, rid)["ebs_volume_id"] == volume_id, "the reservation shows its volume"
    disk = api.call("GET", f"/v1/disks/{name}", profile="alice").body
    assert disk["held_volume_id"] == volume_id
    pv = local_cloud.kubernetes.store.get("persistentvolumes", None, f"gpu-dev-{rid}-home")
    assert pv["spec"]["csi"]["volumeHandle"] == volume_id
    (pod,) = objects_of(local_cloud, rid)["pods"]
    attached = _volume(local_cloud, volume_id)
    assert attached is not None
    assert [a["InstanceId"] for a in attached["Attachments"]] == [pod["spec"]["nodeName"]]
    assert _duplicates(local_cloud, name) == [], "the reconciler agrees: one volume, the disk's"

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    freed = _free(local_cloud, name)

    (saved,) = _snapshots(local_cloud, name)
    assert saved["State"] == "completed" and saved["VolumeId"] == volume_id
    assert _volume(local_cloud, volume_id) is None, "deleted once its snapshot completed"
    # The figures, as the save completed (the disk has no volume for the reconciler now).
    assert freed["snapshot_count"] == 1 and freed["last_snapshot_at"] == saved["StartTime"]
    assert freed["size_gb"] == 2048 and freed["is_backing_up"] is False
    shown = api.call("GET", f"/v1/disks/{name}", profile="alice").body
    assert shown["snapshot_count"] == 1 and shown["last_snapshot_at"] is not None
    content = api.call("GET", f"/v1/disks/{name}/content", profile="alice").body
    assert content["content_listing"] == LISTING, "the pod saw the imported volume's data"
    _reconcile(local_cloud)
    assert _disk_row(local_cloud, name)["snapshot_count"] == 1
    assert_nothing_left(local_cloud, rid)

    again = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for_status(api, again, "active")
    restored = _volume(local_cloud, show(api, again)["ebs_volume_id"])
    assert restored is not None and restored["SnapshotId"] == saved["SnapshotId"]


def test_an_imported_volume_in_another_zone_is_copied_through_a_snapshot_then_deleted(
    api, local_cloud, imported
):
    zone = _other_zone(local_cloud)
    name, volume_id = imported(zone)

    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for_status(api, rid, "active")

    (copied,) = _snapshots(local_cloud, name)
    assert copied["VolumeId"] == volume_id and copied["State"] == "completed"
    mounted = _volume(local_cloud, show(api, rid)["ebs_volume_id"])
    assert mounted is not None and mounted["SnapshotId"] == copied["SnapshotId"]
    assert mounted["AvailabilityZone"] == _cpu_zone(local_cloud) != zone
    assert _volume(local_cloud, volume_id) is None, "deleted: its data is in the snapshot"
    row = _disk_row(local_cloud, name)
    assert row["held_volume_id"] == mounted["VolumeId"] and row["snapshot_count"] == 1
    assert _duplicates(local_cloud, name) == []

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert _free(local_cloud, name)["snapshot_count"] == 2
    assert_nothing_left(local_cloud, rid)


def _left_as_it_was(cloud: Any, name: str, volume_id: str, rid: str) -> None:
    freed = _free(cloud, name)
    volume = _volume(cloud, volume_id)
    assert volume is not None and volume["State"] == "available", "the data is kept"
    assert cloud.cluster.storage.contents[volume_id] == LISTING_MARKER + LISTING
    assert _snapshots(cloud, name) == [], "no snapshot left behind"
    made = _ec2(cloud).describe_volumes(
        Filters=[
            {"Name": "tag:reservation-id", "Values": [rid]},
            {"Name": "volume-id", "Values": [volume_id]},
        ]
    )["Volumes"]
    assert [v["VolumeId"] for v in made] == [volume_id], "no other volume made"
    other = _ec2(cloud).describe_volumes(Filters=[{"Name": "tag:disk_name", "Values": [name]}])
    assert [v["VolumeId"] for v in other["Volumes"]] == [volume_id]
    assert (freed["snapshot_count"], freed["is_backing_up"]) == (0, False)
    assert_nothing_left(cloud, rid)


def test_a_copy_whose_snapshot_fails_ends_the_reservation_and_keeps_the_volume_as_it_was(
    api,
    local_cloud,
    imported,
    failing_snapshots,  # noqa: F811
):
    name, volume_id = imported(_other_zone(local_cloud))
    failing_snapshots(True)

    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    ended = wait_for_status(api, rid, "failed")

    assert volume_id in ended["failure_reason"] and "snapshot" in ended["failure_reason"]
    assert "kept as it was" in ended["failure_reason"]
    failing_snapshots(False)
    _left_as_it_was(local_cloud, name, volume_id, rid)

    # Reserved again, it copies the same volume, now that snapshots succeed.
    again = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for_status(api, again, "active")
    assert _volume(local_cloud, volume_id) is None
    (copied,) = _snapshots(local_cloud, name)
    assert copied["VolumeId"] == volume_id


def test_a_reservation_cancelled_while_the_copy_is_pending_leaves_the_volume_as_it_was(
    api,
    local_cloud,
    imported,
    slow_snapshots,  # noqa: F811
):
    name, volume_id = imported(_other_zone(local_cloud))
    slow_snapshots(30)

    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for(lambda: _snapshots(local_cloud, name), message="the copy's snapshot started")
    # recorded by the task that started it, moments after EC2 has it
    wait_for(lambda: _disk_row(local_cloud, name)["is_backing_up"], message="backing up")
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")

    _left_as_it_was(local_cloud, name, volume_id, rid)


@pytest.fixture
def refused_copies() -> Iterator[Callable[[bool], None]]:
    """While set, EC2 refuses to make a volume from a snapshot (`InsufficientVolumeCapacity`,
    as it answers when a zone has no room): the copy fails after its snapshot completed."""
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.models.elastic_block_store import EBSBackend

    original = EBSBackend.create_volume
    refusing = {"on": False}

    def create_volume(self: Any, *args: Any, **kwargs: Any) -> Any:
        if refusing["on"] and kwargs.get("snapshot_id"):
            raise EC2ClientError("InsufficientVolumeCapacity", "no room in this zone")
        return original(self, *args, **kwargs)

    EBSBackend.create_volume = create_volume  # type: ignore[method-assign]
    yield lambda on: refusing.update(on=on)
    EBSBackend.create_volume = original  # type: ignore[method-assign]


def test_a_copy_refused_after_its_snapshot_completed_loses_nothing_the_snapshot_holds_it(
    api, local_cloud, imported, refused_copies
):
    """Snapshot-first: the old volume is deleted only because a completed snapshot of it
    exists, and the next reservation restores the disk from that snapshot."""
    name, volume_id = imported(_other_zone(local_cloud))
    refused_copies(True)

    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    ended = wait_for_status(api, rid, "failed")
    assert "InsufficientVolumeCapacity" in ended["failure_reason"]
    freed = _free(local_cloud, name)

    (saved,) = _snapshots(local_cloud, name)
    assert saved["State"] == "completed" and saved["VolumeId"] == volume_id
    assert (freed["snapshot_count"], freed["last_snapshot_at"]) == (1, saved["StartTime"])
    made = _ec2(local_cloud).describe_volumes(
        Filters=[{"Name": "tag:reservation-id", "Values": [rid]}]
    )["Volumes"]
    assert made == [], "no copy left; the old volume deleted: its snapshot holds the data"
    assert_nothing_left(local_cloud, rid)

    refused_copies(False)
    again = reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=name)["reservation_id"]
    wait_for_status(api, again, "active")
    restored = _volume(local_cloud, show(api, again)["ebs_volume_id"])
    assert restored is not None and restored["SnapshotId"] == saved["SnapshotId"]
