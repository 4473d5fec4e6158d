"""The scheduled reconcilers on the local cloud: moto's Auto Scaling and EC2, the Kubernetes
stand-in and PostgreSQL, invoked with the EventBridge events in events/."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gpudev.cluster.vocabulary import RESERVATION_LABEL
from localcloud.stack import LocalCloud
from tests.support.waiting import wait_for

EVENTS = Path(__file__).resolve().parents[2] / "events"
NAMESPACE = "gpu-dev"


def _run(cloud: LocalCloud, function: str, event_folder: str) -> dict[str, Any]:
    event = json.loads((EVENTS / event_folder / "scheduled.json").read_text())
    invocation = cloud.lambdas.invoke(function, event)
    assert not invocation.errored, invocation.payload
    return invocation.payload  # type: ignore[no-any-return]


def availability(cloud: LocalCloud, gpu_type: str) -> dict[str, Any]:
    _run(cloud, "AvailabilityUpdater", "availability_updater")
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            """SELECT total_cluster_gpus, available_gpus, full_nodes_available, max_reservable,
                      running_instances, desired_capacity, last_availability_updated_by
               FROM gpu_types WHERE gpu_type = %s""",
            (gpu_type,),
        ).fetchone()
    assert row is not None
    keys = ("total", "available", "full", "max", "running", "desired", "by")
    return dict(zip(keys, row, strict=True))


def _gpu_pod(name: str, gpu_type: str, gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"test": "reconcilers"}},
        "spec": {
            "nodeSelector": {"GpuType": gpu_type},
            "containers": [
                {
                    "name": "gpu-dev",
                    "image": "pytorch",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


@pytest.fixture
def pods(core: Any) -> Iterator[list[str]]:
    created: list[str] = []
    yield created
    for name in created:
        core.delete_namespaced_pod(name, NAMESPACE)
    # Deleted pods terminate for their grace period, holding their GPUs: the next test's
    # availability must not see them.
    wait_for(
        lambda: (
            not {p.metadata.name for p in core.list_namespaced_pod(NAMESPACE).items} & set(created)
        ),
        message="test pods deleted",
    )


def _bound(core: Any, name: str) -> Any:
    return wait_for(
        lambda: core.read_namespaced_pod(name, NAMESPACE).spec.node_name, message=f"{name} bound"
    )


def test_h100_seed_scenario(local_cloud: LocalCloud, core: Any, pods: list[str]):
    name = f"gpu-dev-{uuid.uuid4().hex[:8]}"
    core.create_namespaced_pod(NAMESPACE, _gpu_pod(name, "h100", 4))
    pods.append(name)
    _bound(core, name)
    result = availability(local_cloud, "h100")
    assert {k: result[k] for k in ("total", "available", "full", "max", "running")} == {
        "total": 16,
        "available": 12,
        "full": 1,
        "max": 8,
        "running": 2,
    }
    assert result["by"].startswith("gpudev-availability-updater:")


def test_cpu_seed_scenario(local_cloud: LocalCloud, api: Any, core: Any, pods: list[str]):
    autoscaling = local_cloud.aws.client("autoscaling")  # type: ignore[union-attr]
    group = "pytorch-gpu-dev-cpu-nodes-cpu-x86"
    autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=2)
    try:
        wait_for(
            lambda: len(core.list_node(label_selector="GpuType=cpu-x86").items) == 2,
            message="second cpu node",
        )
        name = f"gpu-dev-{uuid.uuid4().hex[:8]}"
        # A reservation's pod takes a CPU slot: one that carries its (live) reservation's
        # label, as the lifecycle's do; an unlabelled pod (the pre-puller's) takes none.
        body = {"gpu_type": "cpu-x86", "gpu_count": 0, "hours": 1, "github_user": "alice"}
        reply = api.call("POST", "/v1/reservations", body=body)
        assert reply.status == 202, reply.body
        dev_pod = _gpu_pod(name, "cpu-x86", 0)
        dev_pod["metadata"]["labels"][RESERVATION_LABEL] = reply.body["reservation_id"]
        core.create_namespaced_pod(NAMESPACE, dev_pod)
        pods.append(name)
        _bound(core, name)
        result = availability(local_cloud, "cpu-x86")
        assert (result["total"], result["available"], result["max"]) == (6, 5, 1)
    finally:
        autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=1)
    wait_for(
        lambda: len(core.list_node(label_selector="GpuType=cpu-x86").items) == 1,
        message="back to one cpu node",
    )


def test_desired_capacity_changes_show_up_on_the_next_run(local_cloud: LocalCloud, core: Any):
    autoscaling = local_cloud.aws.client("autoscaling")  # type: ignore[union-attr]
    group = "pytorch-gpu-dev-gpu-nodes-t4"
    autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=3)
    try:
        assert (
            availability(local_cloud, "t4")["desired"],
            availability(local_cloud, "t4")["running"],
        ) == (3, 3)
    finally:
        autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=2)
    assert availability(local_cloud, "t4")["total"] == 8


def _take_out(core: Any, node: str, how: str, out: bool) -> None:
    """Cordon the node or mark it not ready (`out`), or undo that."""
    if how == "cordoned":
        core.patch_node(node, {"spec": {"unschedulable": True if out else None}})
    else:
        ready = (
            {"status": "False", "reason": "KubeletNotReady"}
            if out
            else {"status": "True", "reason": "KubeletReady"}
        )
        core.patch_node_status(node, {"status": {"conditions": [{"type": "Ready", **ready}]}})


@pytest.mark.parametrize("how", ["cordoned", "not ready"])
def test_a_cordoned_or_not_ready_node_counts_nothing(local_cloud: LocalCloud, core: Any, how: str):
    node = core.list_node(label_selector="GpuType=h100").items[0].metadata.name
    _take_out(core, node, how, out=True)
    try:
        result = availability(local_cloud, "h100")
        assert (result["total"], result["available"], result["full"]) == (16, 8, 1)
    finally:
        _take_out(core, node, how, out=False)
    assert availability(local_cloud, "h100")["available"] == 16


def _disk(cloud: LocalCloud, user: str, name: str) -> tuple[Any, ...] | None:
    with psycopg.connect(cloud.database_url) as conn:
        return conn.execute(
            "SELECT ebs_volume_id, size_gb, in_use FROM disks"
            " WHERE user_id = %s AND disk_name = %s",
            (user, name),
        ).fetchone()


def test_an_ebs_attachment_does_not_make_a_disk_in_use(local_cloud: LocalCloud):
    """The holder (reservation_id, and in_use generated from it) is the lifecycle's: the
    reconciler imports the volume and follows its size and snapshots, never its attachments
    (docs/disks.md, "Persistent disks", who owns which field)."""
    result = _run(local_cloud, "DiskReconciler", "disk_reconciler")
    assert result["outcome"] in ("succeeded", "skipped")  # the ticker may be mid-run
    wait_for(lambda: _disk(local_cloud, "alice", "datasets"), message="seeded volume imported")
    volume_id, size, in_use = _disk(local_cloud, "alice", "datasets")  # type: ignore[misc]
    assert (size, in_use) == (2048, False)
    ec2 = local_cloud.aws.client("ec2")  # type: ignore[union-attr]
    # An instance of its own in the volume's zone (not in any node group, so no node): the
    # groups' instances come and go with other tests' capacity changes.
    image = ec2.describe_images()["Images"][0]["ImageId"]
    instance = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, Placement={"AvailabilityZone": "us-east-2a"}
    )["Instances"][0]["InstanceId"]
    ec2.attach_volume(VolumeId=volume_id, InstanceId=instance, Device="/dev/sdf")
    try:
        for _ in range(2):  # one run may be skipped while the ticker holds the lock
            _run(local_cloud, "DiskReconciler", "disk_reconciler")
        assert _disk(local_cloud, "alice", "datasets") == (volume_id, 2048, False)
    finally:
        ec2.detach_volume(VolumeId=volume_id, InstanceId=instance, Device="/dev/sdf")
        ec2.terminate_instances(InstanceIds=[instance])
