"""A pod that will not go (its node is gone or hung) does not hold a disk forever
(gpudev/lifecycle/disk.py, lifecycle/patience.py): real PostgreSQL, moto's EC2 (a volume
attached to an instance that never lets it go) and the Kubernetes stand-in's API server,
which keeps a Terminating pod until a kubelet, which it does not run here, deletes it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest
from kubernetes import client

from gpudev.cluster.home_listing import LISTING_FINALIZER
from gpudev.cluster.vocabulary import RESERVATION_LABEL
from gpudev.disks.ebs import disk_tags
from gpudev.lifecycle.disk import release_disk, save_disk, save_for_the_sweeper
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.payloads import ReleaseDisk, SaveDisk
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.settings import LifecycleSettings
from gpudev.signals import Signals
from localcloud.kubernetes.store import ObjectStore
from tests.integration.test_sweeper import end_row, insert
from tests.integration.test_sweeper import world as world  # the fixture
from tests.support.kubernetes import stand_in_api_client, stand_in_server

NAMESPACE = "gpu-dev"
SETTINGS = LifecycleSettings()
POD_PATIENCE = SETTINGS.pod_release_patience_seconds


@pytest.fixture
def api_client() -> Iterator[Any]:
    server = stand_in_server(ObjectStore(), "test")
    server.start()
    api = stand_in_api_client(server)
    try:
        yield api
    finally:
        api.close()
        server.stop()


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def _ended_with_a_disk(url: str, ec2: Any) -> tuple[uuid.UUID, str, str, float]:
    """An ended reservation holding a disk whose volume is still attached to its node's
    instance: (reservation id, volume id, instance id, when it ended)."""
    rid = insert(url, "active")
    end_row(url, rid, "1 second")
    name = f"work-{str(rid)[:8]}"
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]
    volume = ec2.create_volume(
        AvailabilityZone=instance["Placement"]["AvailabilityZone"],
        Size=8,
        TagSpecifications=[{"ResourceType": "volume", "Tags": disk_tags("alice", name, str(rid))}],
    )["VolumeId"]
    ec2.attach_volume(VolumeId=volume, InstanceId=instance["InstanceId"], Device="/dev/sdf")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE reservations SET pod_name = %s WHERE reservation_id = %s",
            (f"gpu-dev-{str(rid)[:8]}-0", rid),
        )
        conn.execute(
            "INSERT INTO disks (user_id, disk_name, reservation_id, held_volume_id)"
            " VALUES ('alice', %s, %s, %s)",
            (name, rid, volume),
        )
        (ended,) = conn.execute(
            "SELECT reservation_ended FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()  # type: ignore[misc]
    assert isinstance(ended, datetime)
    return rid, volume, instance["InstanceId"], ended.timestamp()


def _terminating_pod_on_a_hung_node(core: client.CoreV1Api, rid: uuid.UUID) -> str:
    """Pod 0, on a node, with the listing's finalizer, deleted with its grace period: it
    stays Terminating, since no kubelet confirms the deletion."""
    name = f"gpu-dev-{str(rid)[:8]}-0"
    core.create_namespaced_pod(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {RESERVATION_LABEL: str(rid)},
                "finalizers": [LISTING_FINALIZER],
            },
            "spec": {
                "nodeName": "h100-0",
                "containers": [{"name": "dev", "image": "pytorch/pytorch"}],
            },
        },
    )
    # What its kubelet last reported before the node hung: running.
    running = {
        "name": "dev",
        "ready": True,
        "restartCount": 0,
        "image": "pytorch/pytorch",
        "imageID": "",
        "state": {"running": {"startedAt": "2026-11-27T10:00:00Z"}},
    }
    core.patch_namespaced_pod_status(
        name, NAMESPACE, {"status": {"phase": "Running", "containerStatuses": [running]}}
    )
    core.delete_namespaced_pod(name, NAMESPACE)
    return name


def _pods(core: client.CoreV1Api) -> list[str]:
    return [p.metadata.name for p in core.list_namespaced_pod(NAMESPACE).items]


def _lifecycle(conn: Any, api_client: Any, ec2: Any, clock: Clock) -> Lifecycle:
    return Lifecycle(
        conn,
        api_client,
        Signals(None),
        GithubKeys(),
        SETTINGS,
        NAMESPACE,
        "gpu-dev-profiling",
        ec2=ec2,
        clock=clock,
    )


def _held(url: str, rid: uuid.UUID) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT 1 FROM disks WHERE reservation_id = %s", (rid,)).fetchone()
    return row is not None


def test_a_pod_on_a_hung_node_is_let_go_after_the_patience_and_the_disk_saved_from_its_volume(
    world: Any, api_client: Any, ec2: Any
):
    core = client.CoreV1Api(api_client)
    rid, volume, _instance, ended = _ended_with_a_disk(world.url, ec2)
    pod = _terminating_pod_on_a_hung_node(core, rid)
    clock = Clock(ended + 10)
    task = SaveDisk(reservation_id=rid)

    with psycopg.connect(world.url, autocommit=True) as conn:
        lifecycle = _lifecycle(conn, api_client, ec2, clock)
        patient = save_disk(lifecycle, task)
        assert (patient.outcome, patient.detail) == ("waiting", "the pod is stopping")
        assert _pods(core) == [pod], "within the patience: the kubelet may still stop it"

        clock.at = ended + POD_PATIENCE
        forced = save_disk(lifecycle, task)
        assert forced.outcome == "waiting" and "no grace period" in (forced.detail or "")
        assert _pods(core) == [], "deleted with no grace period, its finalizer removed"

        # The volume is still attached to the hung node's instance: forced off it first, so
        # nothing the node's containers write after the snapshot is lost with the volume.
        assert ec2.describe_volumes(VolumeIds=[volume])["Volumes"][0]["State"] == "in-use"
        detaching = save_disk(lifecycle, task)
        assert (detaching.outcome, detaching.detail) == (
            "waiting",
            "the volume is being detached by force",
        )
        assert (
            ec2.describe_snapshots(Filters=[{"Name": "volume-id", "Values": [volume]}])["Snapshots"]
            == []
        ), "no snapshot while attached"
        assert ec2.describe_volumes(VolumeIds=[volume])["Volumes"][0]["Attachments"] == []
        saved = save_disk(lifecycle, task)
        assert saved.outcome == "saved"
        (snapshot,) = ec2.describe_snapshots(Filters=[{"Name": "volume-id", "Values": [volume]}])[
            "Snapshots"
        ]
        assert snapshot["State"] == "completed"
        assert _held(world.url, rid), "the hold stays until the volume is gone"
        release_disk(lifecycle, ReleaseDisk(reservation_id=rid))

    assert not _held(world.url, rid)
    assert (
        ec2.describe_volumes(Filters=[{"Name": "volume-id", "Values": [volume]}])["Volumes"] == []
    )
    assert ec2.describe_snapshots(SnapshotIds=[snapshot["SnapshotId"]])["Snapshots"]


def test_within_the_pod_patience_an_attached_volume_is_waited_for_not_snapshotted(
    world: Any, api_client: Any, ec2: Any
):
    rid, volume, _instance, ended = _ended_with_a_disk(world.url, ec2)
    with psycopg.connect(world.url, autocommit=True) as conn:
        lifecycle = _lifecycle(conn, api_client, ec2, Clock(ended + POD_PATIENCE - 1))
        waiting = save_disk(lifecycle, SaveDisk(reservation_id=rid))

    assert (waiting.outcome, waiting.detail) == ("waiting", "the volume is detaching")
    assert (
        ec2.describe_snapshots(Filters=[{"Name": "volume-id", "Values": [volume]}])["Snapshots"]
        == []
    )


def test_past_the_save_patience_the_execution_hands_off_and_the_sweeper_keeps_waiting(
    world: Any, api_client: Any, ec2: Any
):
    core = client.CoreV1Api(api_client)
    rid, _volume, _instance, ended = _ended_with_a_disk(world.url, ec2)
    _terminating_pod_on_a_hung_node(core, rid)
    clock = Clock(ended + SETTINGS.save_patience_seconds)

    with psycopg.connect(world.url, autocommit=True) as conn:
        lifecycle = _lifecycle(conn, api_client, ec2, clock)
        handed = save_disk(lifecycle, SaveDisk(reservation_id=rid))
        assert handed.outcome == "handoff" and handed.seconds == 0
        # The sweeper has no patience to run out of: for it the same state is a wait.
        assert save_for_the_sweeper(lifecycle, rid) in ("waiting", "freed")
    assert _pods(core) == [], "the pod was let go on the way"
