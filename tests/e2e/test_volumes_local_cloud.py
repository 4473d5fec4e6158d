"""The volume simulation wired into the local cloud itself: a disk on a seeded node is
attached to that node's instance in moto while its pod runs, and the snapshot-completion
knob reaches moto's EC2 as our functions call it."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcloud.stack import LocalCloud
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev"
ZONE_LABEL = "topology.kubernetes.io/zone"


def _volumes(cloud: LocalCloud, volume_id: str) -> dict[str, Any]:
    ec2 = cloud.aws.client("ec2")  # type: ignore[union-attr]
    volume: dict[str, Any] = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
    return volume


def _gone(read: Any) -> bool:
    try:
        read()
    except ApiException as error:
        return error.status == 404
    return False


def test_a_disk_is_attached_to_the_node_of_its_pod_while_the_pod_exists(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    node = core.list_node(label_selector="GpuType=cpu-x86").items[0]
    zone = node.metadata.labels[ZONE_LABEL]
    ec2 = local_cloud.aws.client("ec2")  # type: ignore[union-attr]
    volume_id = ec2.create_volume(AvailabilityZone=zone, Size=8, VolumeType="gp3")["VolumeId"]
    run = uuid.uuid4().hex[:6]
    pv, claim, pod = f"disk-{run}", f"home-{run}", f"dev-{run}"
    term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
    core.create_persistent_volume(
        {
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "8Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": volume_id},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        NAMESPACE,
        {
            "metadata": {"name": claim},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "8Gi"}},
            },
        },
    )
    core.create_namespaced_pod(
        NAMESPACE,
        {
            "metadata": {"name": pod},
            "spec": {
                "nodeName": node.metadata.name,
                "containers": [
                    {
                        "name": "dev",
                        "image": "busybox",
                        "volumeMounts": [{"name": "home", "mountPath": "/home/dev"}],
                    }
                ],
                "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": claim}}],
            },
        },
    )
    try:
        wait_for(
            lambda: core.read_namespaced_pod(pod, NAMESPACE).status.phase == "Running",
            message="pod running with its disk",
        )
        attachments = _volumes(local_cloud, volume_id)["Attachments"]
        assert [(a["InstanceId"], a["State"]) for a in attachments] == [
            (node.metadata.name, "attached")
        ]
    finally:
        core.delete_namespaced_pod(pod, NAMESPACE, grace_period_seconds=0)
        core.delete_namespaced_persistent_volume_claim(claim, NAMESPACE)
    wait_for(lambda: not _volumes(local_cloud, volume_id)["Attachments"], message="detached")
    wait_for(lambda: core.read_persistent_volume(pv).status.phase == "Released", message="released")
    core.delete_persistent_volume(pv)  # Released: not protected any more
    wait_for(lambda: _gone(lambda: core.read_persistent_volume(pv)), message="PV deleted")
    assert _volumes(local_cloud, volume_id)["State"] == "available"  # Retain: EBS untouched


def test_snapshots_can_be_kept_pending(local_cloud: LocalCloud):
    ec2 = local_cloud.aws.client("ec2")  # type: ignore[union-attr]
    volume_id = ec2.create_volume(AvailabilityZone="us-east-2a", Size=8, VolumeType="gp3")[
        "VolumeId"
    ]
    assert local_cloud.snapshots.delay_seconds == 0  # the default: moto's immediate completion
    assert ec2.create_snapshot(VolumeId=volume_id)["State"] == "completed"
    local_cloud.snapshots.delay_seconds = 0.5
    try:
        snapshot = ec2.create_snapshot(VolumeId=volume_id)["SnapshotId"]
    finally:
        local_cloud.snapshots.delay_seconds = 0
    state = ec2.describe_snapshots(SnapshotIds=[snapshot])["Snapshots"][0]["State"]
    assert state == "pending"
    time.sleep(0.6)
    assert ec2.describe_snapshots(SnapshotIds=[snapshot])["Snapshots"][0]["State"] == "completed"
