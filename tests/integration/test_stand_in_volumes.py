"""PersistentVolumes and claims on the Kubernetes stand-in, through the official client over
HTTP, with the simulated cluster's EBS CSI attach seen in moto's EC2.

The cluster here is small and its own: moto with one t4 node in us-east-2a and one in
us-east-2b (each an Auto Scaling group's instance), the stand-in, and the simulated
scheduler, kubelet, volume controllers and attacher, with short delays. A disk is what
the layer will create: an EBS gp3 volume in a zone, a PersistentVolume of the EBS CSI
driver with node affinity on that zone, and a claim bound to it by `volumeName`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcloud.aws import LocalAws
from localcloud.deadline import Deadline
from localcloud.kubernetes.cluster import NodeShape, SimulatedCluster
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import stand_in_api_client, stand_in_server
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev"
ZONES = ("us-east-2a", "us-east-2b")
ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass
class Cluster:
    core: client.CoreV1Api
    ec2: Any
    nodes: dict[str, str]  # zone -> node (instance) name
    contents: dict[str, str]  # EBS volume id -> what a listing of its files prints


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    aws = LocalAws("us-east-2").start()
    ec2, autoscaling = aws.client("ec2"), aws.client("autoscaling")
    for zone in ZONES:
        ec2.create_launch_template(
            LaunchTemplateName=f"t4-{zone}",
            LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g4dn.12xlarge"},
        )
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=f"t4-{zone}",
            LaunchTemplate={"LaunchTemplateName": f"t4-{zone}", "Version": "$Latest"},
            MinSize=0,
            MaxSize=1,
            DesiredCapacity=1,
            AvailabilityZones=[zone],
            Tags=[{"Key": "GpuType", "Value": "t4", "PropagateAtLaunch": True}],
        )
    store = ObjectStore()
    server = stand_in_server(store, "test").start()
    simulated = SimulatedCluster(
        store,
        autoscaling,
        {"t4": NodeShape("t4", "g4dn.12xlarge", 4, 48, 192)},
        kubelet_delay_seconds=0.05,
        termination_seconds_scale=0.05,  # our 10 s grace period: 0.5 s
        ec2=ec2,
    ).start()
    api_client = stand_in_api_client(server)
    core = client.CoreV1Api(api_client)
    nodes = {n.metadata.labels[ZONE_LABEL]: n.metadata.name for n in core.list_node().items}
    try:
        yield Cluster(core, ec2, nodes, simulated.storage.contents)
    finally:
        api_client.close()
        simulated.stop(Deadline.after(5))
        server.stop()
        aws.stop()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _ebs_volume(ec2: Any, zone: str) -> str:
    return str(ec2.create_volume(AvailabilityZone=zone, Size=16, VolumeType="gp3")["VolumeId"])


def _pv(
    name: str, volume_id: str, zone: str | None, size: str = "16Gi", reclaim: str = "Retain"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": reclaim,
        "storageClassName": "",
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": volume_id, "fsType": "ext4"},
    }
    if zone:
        term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return {"metadata": {"name": name, "labels": {"gpu-dev/disk": "work"}}, "spec": spec}


def _claim(
    name: str, volume: str, size: str = "16Gi", modes: tuple[str, ...] = ("ReadWriteOnce",)
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": list(modes),
            "storageClassName": "",
            "volumeName": volume,
            "resources": {"requests": {"storage": size}},
        },
    }


def _pod(
    name: str, claim: str, *, node: str | None = None, zone: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 10,
        "containers": [
            {
                "name": "dev",
                "image": "pytorch/pytorch:latest",
                "volumeMounts": [{"name": "home", "mountPath": "/home/dev"}],
                "resources": {
                    "requests": {"nvidia.com/gpu": "1"},
                    "limits": {"nvidia.com/gpu": "1"},
                },
            }
        ],
        "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": claim}}],
    }
    if node:
        spec["nodeName"] = node  # pinned, as our lifecycle pins pods: no scheduler
    elif zone:
        spec["nodeSelector"] = {ZONE_LABEL: zone}
    return {"metadata": {"name": name}, "spec": spec}


def _disk(cluster: Cluster, zone: str, affinity_zone: str | None = "same") -> tuple[str, str, str]:
    """An EBS volume in `zone`, its PV (node affinity on `affinity_zone`, by default the
    volume's) and a claim bound to it: (volume id, PV name, claim name)."""
    volume_id = _ebs_volume(cluster.ec2, zone)
    pv, claim = _name("pv"), _name("home")
    cluster.core.create_persistent_volume(
        _pv(pv, volume_id, zone if affinity_zone == "same" else affinity_zone)
    )
    cluster.core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim(claim, pv))
    _phase_of_claim(cluster, claim, "Bound")
    return volume_id, pv, claim


def _phase_of_claim(cluster: Cluster, name: str, phase: str) -> Any:
    return wait_for(
        lambda: (
            (
                c := cluster.core.read_namespaced_persistent_volume_claim(name, NAMESPACE)
            ).status.phase
            == phase
            and c
        ),
        message=f"claim {name} {phase}",
    )


def _phase_of_volume(cluster: Cluster, name: str, phase: str) -> Any:
    return wait_for(
        lambda: (v := cluster.core.read_persistent_volume(name)).status.phase == phase and v,
        message=f"PV {name} {phase}",
    )


def _events(cluster: Cluster, name: str, namespace: str = NAMESPACE) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event in cluster.core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    ).items:
        found.setdefault(event.reason, []).append(event.message)
    return found


def _attachments(cluster: Cluster, volume_id: str) -> list[tuple[str, str]]:
    volume = cluster.ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
    return [(a["InstanceId"], a["State"]) for a in volume["Attachments"]]


def _gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as error:
        return error.status == 404
    return False


def _status(error: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    import json

    body: dict[str, Any] = json.loads(error.value.body)
    return body


# -- the API ----------------------------------------------------------------------------
def test_a_claim_naming_a_volume_binds_to_it(cluster: Cluster):
    volume_id = _ebs_volume(cluster.ec2, "us-east-2a")
    pv, claim = _name("pv"), _name("home")
    created = cluster.core.create_persistent_volume(_pv(pv, volume_id, "us-east-2a"))
    assert created.status.phase == "Pending"  # the API server's; the controller makes it Available
    assert created.metadata.finalizers == ["kubernetes.io/pv-protection"]
    assert created.spec.volume_mode == "Filesystem"
    _phase_of_volume(cluster, pv, "Available")
    made = cluster.core.create_namespaced_persistent_volume_claim(
        NAMESPACE, _claim(claim, pv, size="10Gi")
    )
    assert made.metadata.finalizers == ["kubernetes.io/pvc-protection"]

    bound = _phase_of_claim(cluster, claim, "Bound")
    volume = _phase_of_volume(cluster, pv, "Bound")
    assert volume.spec.claim_ref.name == claim and volume.spec.claim_ref.uid == bound.metadata.uid
    assert volume.spec.claim_ref.namespace == NAMESPACE
    assert bound.status.capacity == {"storage": "16Gi"}  # the volume's, not the request's
    assert bound.status.access_modes == ["ReadWriteOnce"]
    assert bound.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    listed = cluster.core.list_persistent_volume(label_selector="gpu-dev/disk=work").items
    assert pv in {v.metadata.name for v in listed}
    assert cluster.core.list_persistent_volume(label_selector="gpu-dev/disk=other").items == []


@pytest.mark.parametrize(
    ("claim_size", "modes", "reason"),
    [
        ("17Gi", ("ReadWriteOnce",), "requested PV is too small"),
        ("8Gi", ("ReadWriteMany",), "incompatible accessMode"),
    ],
)
def test_a_claim_the_volume_cannot_serve_stays_pending(cluster: Cluster, claim_size, modes, reason):
    pv, claim = _name("pv"), _name("home")
    cluster.core.create_persistent_volume(_pv(pv, _ebs_volume(cluster.ec2, "us-east-2a"), None))
    cluster.core.create_namespaced_persistent_volume_claim(
        NAMESPACE, _claim(claim, pv, claim_size, modes)
    )
    wait_for(lambda: _events(cluster, claim).get("VolumeMismatch"), message="VolumeMismatch event")
    assert _events(cluster, claim)["VolumeMismatch"] == [
        f'Cannot bind to requested volume "{pv}": {reason}'
    ]
    assert (
        cluster.core.read_namespaced_persistent_volume_claim(claim, NAMESPACE).status.phase
        == "Pending"
    )
    assert cluster.core.read_persistent_volume(pv).spec.claim_ref is None


def test_invalid_volumes_and_claims_are_refused_with_the_api_servers_causes(cluster: Cluster):
    with pytest.raises(ApiException) as refused:
        cluster.core.create_persistent_volume(
            {"metadata": {"name": "broken"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        )
    status = _status(refused)
    assert refused.value.status == 422 and status["reason"] == "Invalid"
    assert {(c["field"], c["reason"]) for c in status["details"]["causes"]} == {
        ("spec.capacity", "FieldValueRequired"),
        ("spec.capacity", "FieldValueNotSupported"),
        ("spec", "FieldValueRequired"),
    }
    with pytest.raises(ApiException) as refused:
        cluster.core.create_persistent_volume(_pv("no-handle", "", "us-east-2a"))
    assert [c["field"] for c in _status(refused)["details"]["causes"]] == ["spec.csi.volumeHandle"]
    with pytest.raises(ApiException) as refused:
        cluster.core.create_namespaced_persistent_volume_claim(
            NAMESPACE, {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        )
    assert _status(refused)["message"] == (
        'PersistentVolumeClaim "c" is invalid: spec.resources[storage]: Required value'
    )
    with pytest.raises(ApiException) as refused:
        cluster.core.create_namespaced_persistent_volume_claim(
            NAMESPACE, _claim("c", "pv", size="lots")
        )
    assert refused.value.status == 400  # a quantity that does not decode
    assert _gone(lambda: cluster.core.read_namespaced_persistent_volume_claim("c", NAMESPACE))


def test_names_are_unique_and_specs_immutable(cluster: Cluster):
    volume_id, pv, claim = _disk(cluster, "us-east-2a")
    with pytest.raises(ApiException) as taken:
        cluster.core.create_persistent_volume(_pv(pv, volume_id, "us-east-2a"))
    assert taken.value.status == 409 and _status(taken)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as missing:
        cluster.core.read_namespaced_persistent_volume_claim("nothing-here", NAMESPACE)
    assert missing.value.status == 404
    with pytest.raises(ApiException) as immutable:
        cluster.core.patch_persistent_volume(pv, {"spec": {"csi": {"volumeHandle": "vol-other"}}})
    assert immutable.value.status == 422
    assert _status(immutable)["details"]["causes"][0]["field"] == "spec.persistentvolumesource"
    with pytest.raises(ApiException) as immutable:
        cluster.core.patch_namespaced_persistent_volume_claim(
            claim, NAMESPACE, {"spec": {"accessModes": ["ReadWriteMany"]}}
        )
    assert _status(immutable)["message"].startswith(
        f'PersistentVolumeClaim "{claim}" is invalid: spec: Forbidden: spec is immutable after '
        "creation except resources.requests and volumeAttributesClassName for bound claims"
    )
    with pytest.raises(ApiException) as resize:  # no storage class: not expandable
        cluster.core.patch_namespaced_persistent_volume_claim(
            claim, NAMESPACE, {"spec": {"resources": {"requests": {"storage": "32Gi"}}}}
        )
    assert (
        resize.value.status == 403
        and "only dynamically provisioned pvc can be resized" in (_status(resize)["message"])
    )
    # labels may change: replace keeps the spec
    current = cluster.core.read_persistent_volume(pv)
    current.metadata.labels["gpu-dev/disk"] = "renamed"
    assert (
        cluster.core.replace_persistent_volume(pv, current).metadata.labels["gpu-dev/disk"]
        == "renamed"
    )


# -- scheduling, attach, detach ----------------------------------------------------------
def test_a_pod_waits_for_its_claim_then_runs_with_the_volume_attached(cluster: Cluster):
    pod, claim, pv = _name("dev"), _name("home"), _name("pv")
    core = cluster.core
    core.create_namespaced_pod(NAMESPACE, _pod(pod, claim))

    def scheduling_message() -> str:
        conditions = core.read_namespaced_pod(pod, NAMESPACE).status.conditions or []
        return next(
            (c.message for c in conditions if c.type == "PodScheduled" and c.status == "False"), ""
        )

    wait_for(
        lambda: f'persistentvolumeclaim "{claim}" not found' in scheduling_message(),
        message="not found",
    )
    assert scheduling_message().startswith("0/2 nodes are available: persistentvolumeclaim")
    core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim(claim, pv))  # its PV: not yet
    wait_for(
        lambda: "pod has unbound immediate PersistentVolumeClaims" in scheduling_message(),
        message="unbound",
    )
    volume_id = _ebs_volume(cluster.ec2, "us-east-2b")
    core.create_persistent_volume(_pv(pv, volume_id, "us-east-2b"))

    running = wait_for(
        lambda: (p := core.read_namespaced_pod(pod, NAMESPACE)).status.phase == "Running" and p,
        message="pod running",
    )
    assert running.spec.node_name == cluster.nodes["us-east-2b"]  # where the volume is
    assert _attachments(cluster, volume_id) == [(cluster.nodes["us-east-2b"], "attached")]
    assert _events(cluster, pod)["SuccessfulAttachVolume"] == [
        f'AttachVolume.Attach succeeded for volume "{pv}"'
    ]

    core.delete_namespaced_pod(pod, NAMESPACE)  # graceful: 10 s x 0.05
    assert core.read_namespaced_pod(pod, NAMESPACE).metadata.deletion_timestamp
    assert _attachments(cluster, volume_id) == [(cluster.nodes["us-east-2b"], "attached")]
    wait_for(lambda: _gone(lambda: core.read_namespaced_pod(pod, NAMESPACE)), message="pod gone")
    wait_for(lambda: _attachments(cluster, volume_id) == [], message="detached")
    assert cluster.ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]["State"] == "available"


def test_the_scheduler_will_not_place_a_pod_away_from_its_volume(cluster: Cluster):
    volume_id, _pv_name, claim = _disk(cluster, "us-east-2a")
    pod = _name("dev")
    cluster.core.create_namespaced_pod(NAMESPACE, _pod(pod, claim, zone="us-east-2b"))
    condition = wait_for(
        lambda: next(
            (
                c
                for c in cluster.core.read_namespaced_pod(pod, NAMESPACE).status.conditions or []
                if c.status == "False"
            ),
            None,
        ),
        message="unschedulable",
    )
    assert condition.reason == "Unschedulable"
    assert condition.message.startswith(
        "0/2 nodes are available: 1 node(s) had volume node affinity conflict, "
        "1 node(s) didn't match Pod's node affinity/selector."
    )
    assert _attachments(cluster, volume_id) == []
    cluster.core.delete_namespaced_pod(pod, NAMESPACE)


def test_a_pod_pinned_to_a_node_in_another_zone_never_starts(cluster: Cluster):
    """Pinned pods skip the scheduler, as ours do: the kubelet refuses to mount a volume
    whose node affinity excludes its node, and the attach fails as EBS refuses it."""
    volume_id, pv, claim = _disk(cluster, "us-east-2a")
    pod = _name("dev")
    cluster.core.create_namespaced_pod(
        NAMESPACE, _pod(pod, claim, node=cluster.nodes["us-east-2b"])
    )
    wait_for(
        lambda: {"FailedMount", "FailedAttachVolume"} <= set(_events(cluster, pod)),
        message="events",
    )
    events = _events(cluster, pod)
    node = cluster.nodes["us-east-2b"]
    assert events["FailedMount"] == [
        f'MountVolume.NodeAffinity check failed for volume "{pv}" : no matching NodeSelectorTerms'
    ]
    assert events["FailedAttachVolume"] == [
        f'AttachVolume.Attach failed for volume "{pv}" : rpc error: code = Internal desc = '
        f'Could not attach volume "{volume_id}" to node "{node}": could not attach volume '
        f'"{volume_id}" to node "{node}": InvalidVolume.ZoneMismatch: The volume '
        f"'{volume_id}' is not in the same availability zone as instance '{node}'"
    ]
    status = cluster.core.read_namespaced_pod(pod, NAMESPACE).status
    assert status.phase == "Pending"
    assert status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    assert _attachments(cluster, volume_id) == []
    cluster.core.delete_namespaced_pod(pod, NAMESPACE)


def test_a_volume_in_another_zone_than_its_pv_says_fails_to_attach(cluster: Cluster):
    """A PV without node affinity lets the pod land anywhere; EBS then refuses the attach."""
    volume_id, _pv_name, claim = _disk(cluster, "us-east-2a", affinity_zone=None)
    pod = _name("dev")
    cluster.core.create_namespaced_pod(
        NAMESPACE, _pod(pod, claim, node=cluster.nodes["us-east-2b"])
    )
    failed = wait_for(
        lambda: _events(cluster, pod).get("FailedAttachVolume"), message="attach failed"
    )
    assert "InvalidVolume.ZoneMismatch" in failed[0]
    assert "FailedMount" not in _events(cluster, pod)
    time.sleep(0.3)
    assert cluster.core.read_namespaced_pod(pod, NAMESPACE).status.phase == "Pending"
    assert _attachments(cluster, volume_id) == []
    cluster.core.delete_namespaced_pod(pod, NAMESPACE)


# -- deletion ------------------------------------------------------------------------------
def test_a_claim_in_use_is_protected_until_its_pod_is_gone_then_the_volume_is_released(
    cluster: Cluster,
):
    volume_id, pv, claim = _disk(cluster, "us-east-2a")
    pod = _name("dev")
    core = cluster.core
    core.create_namespaced_pod(NAMESPACE, _pod(pod, claim, node=cluster.nodes["us-east-2a"]))
    wait_for(
        lambda: core.read_namespaced_pod(pod, NAMESPACE).status.phase == "Running",
        message="running",
    )

    core.delete_namespaced_persistent_volume_claim(claim, NAMESPACE)
    time.sleep(0.3)  # several controller passes
    terminating = core.read_namespaced_persistent_volume_claim(claim, NAMESPACE)
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    assert terminating.status.phase == "Bound"
    assert _attachments(cluster, volume_id) == [(cluster.nodes["us-east-2a"], "attached")]

    core.delete_namespaced_pod(pod, NAMESPACE)
    wait_for(
        lambda: _gone(lambda: core.read_namespaced_persistent_volume_claim(claim, NAMESPACE)),
        message="claim gone",
    )
    released = _phase_of_volume(cluster, pv, "Released")  # Retain
    assert released.spec.claim_ref.name == claim  # kept: the volume is not reused by accident
    wait_for(lambda: _attachments(cluster, volume_id) == [], message="detached")

    again = _name("home")
    core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim(again, pv))
    wait_for(lambda: _events(cluster, again).get("FailedBinding"), message="refused")
    assert _events(cluster, again)["FailedBinding"] == [
        f'volume "{pv}" already bound to a different claim.'
    ]

    # an admin frees the volume by clearing its claimRef: it is Available, the claim binds
    core.patch_persistent_volume(pv, {"spec": {"claimRef": None}})
    assert _phase_of_claim(cluster, again, "Bound").spec.volume_name == pv


def _bound_delete_policy_volume(cluster: Cluster) -> tuple[str, str, str]:
    """An EBS volume's PV with reclaim policy Delete, bound to a new claim: (volume, PV, claim)."""
    volume_id = _ebs_volume(cluster.ec2, "us-east-2a")
    pv, claim = _name("pv"), _name("home")
    cluster.core.create_persistent_volume(_pv(pv, volume_id, "us-east-2a", reclaim="Delete"))
    cluster.core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim(claim, pv))
    _phase_of_claim(cluster, claim, "Bound")
    return volume_id, pv, claim


def test_a_bound_volume_is_protected_and_delete_policy_has_no_deleter(cluster: Cluster):
    volume_id, pv, claim = _bound_delete_policy_volume(cluster)

    cluster.core.delete_persistent_volume(pv)
    time.sleep(0.3)
    held = cluster.core.read_persistent_volume(pv)
    assert held.metadata.deletion_timestamp and held.status.phase == "Bound"

    cluster.core.delete_namespaced_persistent_volume_claim(claim, NAMESPACE)  # no pod uses it
    wait_for(lambda: _gone(lambda: cluster.core.read_persistent_volume(pv)), message="PV gone")
    assert cluster.ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]  # EBS untouched


def test_a_released_delete_policy_volume_fails_without_a_deleter(cluster: Cluster):
    volume_id, pv, claim = _bound_delete_policy_volume(cluster)
    cluster.core.delete_namespaced_persistent_volume_claim(claim, NAMESPACE)
    failed = _phase_of_volume(cluster, pv, "Failed")
    assert failed.status.message == (
        f'error getting deleter volume plugin for volume "{pv}": no deletable volume plugin matched'
    )
    assert cluster.ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]


def test_a_volume_in_use_on_one_node_is_not_attached_to_another(cluster: Cluster):
    volume_id, _pv_name, claim = _disk(cluster, "us-east-2a", affinity_zone=None)
    # the newcomer's name sorts first: who holds the volume must not depend on names
    first, second = _name("zz-dev"), _name("aa-dev")
    core = cluster.core
    core.create_namespaced_pod(NAMESPACE, _pod(first, claim, node=cluster.nodes["us-east-2a"]))
    wait_for(
        lambda: core.read_namespaced_pod(first, NAMESPACE).status.phase == "Running",
        message="first",
    )
    core.create_namespaced_pod(NAMESPACE, _pod(second, claim, node=cluster.nodes["us-east-2b"]))
    failed = wait_for(lambda: _events(cluster, second).get("FailedAttachVolume"), message="refused")
    assert failed[0].startswith("Multi-Attach error for volume")
    assert _attachments(cluster, volume_id) == [(cluster.nodes["us-east-2a"], "attached")]
    assert core.read_namespaced_pod(second, NAMESPACE).status.phase == "Pending"
    for pod in (first, second):
        core.delete_namespaced_pod(pod, NAMESPACE, grace_period_seconds=0)


def test_two_claims_naming_one_volume_bind_one_of_them(cluster: Cluster):
    pv, claims = _name("pv"), [_name("home"), _name("home")]
    for claim in claims:  # both waiting when the volume appears: one controller pass sees both
        cluster.core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim(claim, pv))
    time.sleep(0.2)
    cluster.core.create_persistent_volume(_pv(pv, _ebs_volume(cluster.ec2, "us-east-2a"), None))
    volume = _phase_of_volume(cluster, pv, "Bound")
    winner = volume.spec.claim_ref.name
    loser = next(c for c in claims if c != winner)
    wait_for(lambda: _events(cluster, loser).get("FailedBinding"), message="the other refused")
    assert _phase_of_claim(cluster, winner, "Bound").metadata.uid == volume.spec.claim_ref.uid
    time.sleep(0.2)
    phase = cluster.core.read_namespaced_persistent_volume_claim(loser, NAMESPACE).status.phase
    assert phase == "Pending"


@pytest.mark.parametrize("hooked", [True, False])
def test_a_stopped_pod_held_by_a_finalizer_keeps_its_prestop_listing_as_termination_message(
    cluster: Cluster, hooked: bool
):
    """The kubelet's status write as a pod stops comes before its final delete; a finalizer
    keeps the pod, and the message its preStop hook wrote (here the listing the test gave
    for the volume; the kubelet keeps the last 4096 bytes), until it is removed. Without
    a hook there is no message."""
    volume_id, _pv_name, claim = _disk(cluster, "us-east-2a")
    cluster.contents[volume_id] = "x" * 5000 + "f 12 notes.txt\n"
    pod, core = _name("dev"), cluster.core
    manifest = _pod(pod, claim, node=cluster.nodes["us-east-2a"])
    manifest["metadata"]["finalizers"] = ["gpu-dev.pytorch.org/home-listing"]
    if hooked:
        manifest["spec"]["containers"][0]["lifecycle"] = {
            "preStop": {"exec": {"command": ["/bin/sh", "-c", "ls > /dev/termination-log"]}}
        }
    core.create_namespaced_pod(NAMESPACE, manifest)
    wait_for(
        lambda: core.read_namespaced_pod(pod, NAMESPACE).status.phase == "Running",
        message="running",
    )

    core.delete_namespaced_pod(pod, NAMESPACE)
    stopped = wait_for(
        lambda: (p := core.read_namespaced_pod(pod, NAMESPACE)).status.phase == "Failed" and p,
        message="stopped, kept by its finalizer",
    )
    (status,) = stopped.status.container_statuses
    assert status.state.terminated.exit_code == 137 and not status.ready
    message = status.state.terminated.message
    if hooked:
        assert len(message) == 4096 and message.endswith("f 12 notes.txt\n")
    else:
        assert message is None
    time.sleep(0.3)  # several kubelet passes: still there
    assert core.read_namespaced_pod(pod, NAMESPACE).metadata.finalizers == [
        "gpu-dev.pytorch.org/home-listing"
    ]

    core.patch_namespaced_pod(pod, NAMESPACE, {"metadata": {"finalizers": None}})
    wait_for(lambda: _gone(lambda: core.read_namespaced_pod(pod, NAMESPACE)), message="pod gone")
    wait_for(lambda: _attachments(cluster, volume_id) == [], message="detached")
