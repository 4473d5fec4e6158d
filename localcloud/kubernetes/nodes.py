"""The simulated EKS nodes: one per InService instance of the Auto Scaling groups in moto,
named after it, labelled like EKS GPU nodes, with allocatable GPUs/CPU/memory from the GPU
catalogue, EC2's addresses, the `nodeInfo` an EKS AL2023 node's kubelet reports and its
four conditions, whose `lastHeartbeatTime` the kubelet advances (`heartbeat`); and what
decides whether a node can take a pod (Ready and schedulable, nodeName, nodeSelector,
required node affinity, taints and tolerations).

There are no node Leases (kube-node-lease): a real 1.33 kubelet renews its Lease every 10 s
and posts an unchanged node status only every 5 minutes; here the node status is the
heartbeat, posted every `HEARTBEAT_SECONDS` (the kubelet's nodeStatusUpdateFrequency)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from localcloud.kubernetes import selectors
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import format_time, now

log = logging.getLogger("localcloud.cluster")
Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
PLACEMENT_GROUP_LABEL = "gpu-dev/placement-group"
HEARTBEAT_SECONDS = 10.0
# What the kubelet of an EKS-optimized Amazon Linux 2023 node of 1.33 reports.
KUBELET_VERSION = "v1.33.5-eks-3025e55"
NODE_SOFTWARE = {
    "architecture": "amd64",
    "containerRuntimeVersion": "containerd://1.7.27",
    "kernelVersion": "6.1.147-172.266.amzn2023.x86_64",
    "kubeProxyVersion": "",  # no longer reported by the kubelet (1.31+)
    "kubeletVersion": KUBELET_VERSION,
    "operatingSystem": "linux",
    "osImage": "Amazon Linux 2023.8.20250818",
}
CONDITIONS = (  # type, status, reason, message: a healthy node's, in the kubelet's order
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


@dataclass(frozen=True)
class NodeShape:
    gpu_type: str
    instance_type: str
    gpus: int
    cpus: int
    memory_gb: int
    # A node group in a public subnet: its nodes have an ExternalIP and ExternalDNS, as EC2
    # nodes with a public IPv4 address do; in a private subnet, internal addresses only.
    public_subnet: bool = False
    # EFA interfaces (gpu_types.efa_interfaces): allocatable vpc.amazonaws.com/efa, as the
    # EFA device plugin advertises on a node of an EFA-enabled launch template (efa.py)
    efa: int = 0


def sync_nodes(
    store: ObjectStore, autoscaling: Any, shapes: dict[str, NodeShape], ec2: Any = None
) -> None:
    """Make the nodes follow the InService instances of the groups tagged with a GpuType.

    A node of a group with a placement group (an EFA group, launched with several network
    interfaces) has the ExternalIP EC2 gives its primary interface, as the EKS cloud
    controller reports it: none until an Elastic IP is associated (`ec2_public_ips`)."""
    wanted: dict[str, Obj] = {}
    efa_instances: list[str] = []
    paginator = autoscaling.get_paginator("describe_auto_scaling_groups")
    for page in paginator.paginate():
        for group in page["AutoScalingGroups"]:
            tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
            shape = shapes.get(tags.get("GpuType", ""))
            if shape is None:
                continue
            for instance in group["Instances"]:
                if instance["LifecycleState"] == "InService":
                    wanted[instance["InstanceId"]] = node_object(
                        instance["InstanceId"],
                        instance["AvailabilityZone"],
                        shape,
                        group.get("PlacementGroup"),
                    )
                    if group.get("PlacementGroup"):
                        efa_instances.append(instance["InstanceId"])
    public_ips = ec2_public_ips(ec2, efa_instances) if ec2 is not None and efa_instances else {}
    for name in efa_instances:
        node = wanted[name]
        zone = node["metadata"]["labels"]["topology.kubernetes.io/zone"]
        node["status"]["addresses"] = _addresses(name, zone, False, public_ips.get(name))
    existing = {n["metadata"]["name"]: n for n in store.list("nodes", None, frozen=True)["items"]}
    for name in wanted.keys() - existing.keys():
        store.create("nodes", "", wanted[name])
        log.info("node %s joined (%s)", name, wanted[name]["metadata"]["labels"]["GpuType"])
    for name in existing.keys() - wanted.keys():
        store.delete("nodes", "", name)
        log.info("node %s left", name)
    for name in set(efa_instances) & existing.keys():
        addresses = wanted[name]["status"]["addresses"]
        if existing[name]["status"].get("addresses") != addresses:
            with contextlib.suppress(ApiError):  # the node left meanwhile
                store.update("nodes", "", name, _set_addresses(addresses))
            log.info("node %s addresses now %s", name, addresses)


def _set_addresses(addresses: list[dict[str, str]]) -> Any:
    def change(node: Obj) -> None:
        node["status"]["addresses"] = addresses

    return change


def ec2_public_ips(ec2: Any, instance_ids: list[str]) -> dict[str, str]:
    """The public address of each instance's primary interface (device 0 of card 0), where
    it has one."""
    found: dict[str, str] = {}
    reply = ec2.describe_instances(Filters=[{"Name": "instance-id", "Values": instance_ids}])
    for reservation in reply["Reservations"]:
        for instance in reservation["Instances"]:
            for interface in instance.get("NetworkInterfaces", []):
                attachment = interface.get("Attachment", {})
                public = (interface.get("Association") or {}).get("PublicIp")
                if attachment.get("DeviceIndex") == 0 and public:
                    found[instance["InstanceId"]] = public
    return found


def node_object(name: str, zone: str, shape: NodeShape, placement_group: str | None = None) -> Obj:
    """`placement_group`: its group's cluster placement group, labelled as the cluster
    stack's EFA node groups label their nodes (cdk_app/fabric.py)."""
    capacity = {
        "cpu": str(shape.cpus),
        "memory": f"{shape.memory_gb}Gi",
        "pods": "110",
        GPU: str(shape.gpus),
    }
    if shape.efa:
        capacity[EFA] = str(shape.efa)
    placement = {PLACEMENT_GROUP_LABEL: placement_group} if placement_group else {}
    moment = now()
    return {
        "metadata": {
            "name": name,
            "labels": {
                "GpuType": shape.gpu_type,
                "node.kubernetes.io/instance-type": shape.instance_type,
                "topology.kubernetes.io/zone": zone,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                **placement,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/{name}"},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": kind,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": moment,
                    "lastTransitionTime": moment,
                }
                for kind, status, reason, message in CONDITIONS
            ],
            "addresses": _addresses(name, zone, shape.public_subnet),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": node_info(name),
        },
    }


def node_info(name: str) -> Obj:
    """The node's nodeInfo: the software above, and machine, system and boot ids that are
    the instance's own (derived from its name: the same on every run)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    system = str(uuid.UUID(digest[:32]))
    return {
        **NODE_SOFTWARE,
        "machineID": hashlib.sha256(f"machine/{name}".encode()).hexdigest()[:32],
        "systemUUID": "ec2" + system[3:],  # EC2's system UUIDs begin with ec2
        "bootID": str(uuid.UUID(hashlib.sha256(f"boot/{name}".encode()).hexdigest()[:32])),
    }


def heartbeat(
    store: ObjectStore, period_seconds: float = HEARTBEAT_SECONDS, moment: datetime | None = None
) -> None:
    """Each node's kubelet posts its status when its last is `period_seconds` old: every
    condition's lastHeartbeatTime advances (their status and lastTransitionTime stay)."""
    moment = moment or datetime.now(UTC)
    due = format_time(moment - timedelta(seconds=period_seconds))
    stamp = format_time(moment)

    def beat(node: Obj) -> None:
        for condition in node["status"].get("conditions") or []:
            condition["lastHeartbeatTime"] = stamp

    for node in store.list("nodes", None, frozen=True)["items"]:
        beats = [c.get("lastHeartbeatTime") or "" for c in node["status"].get("conditions") or []]
        if beats and min(beats) <= due:
            with contextlib.suppress(ApiError):  # the node left meanwhile
                store.update("nodes", "", node["metadata"]["name"], beat)


def gpu_request(pod: Obj) -> int:
    """The GPUs a pod's containers ask for (requests, else limits)."""
    return sum(
        int(
            (
                c.get("resources", {}).get("requests") or c.get("resources", {}).get("limits") or {}
            ).get(GPU, 0)
        )
        for c in pod["spec"].get("containers", [])
    )


def allocatable_gpus(node: Obj) -> int:
    return int(node["status"]["allocatable"].get(GPU, 0))


def node_accepts(node: Obj, pod: Obj) -> bool:
    labels = node["metadata"].get("labels", {})
    spec = pod["spec"]
    if spec.get("nodeName") and spec["nodeName"] != node["metadata"]["name"]:
        return False
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        (spec.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(
        all(selectors.expression_matches(labels, e) for e in term.get("matchExpressions", []))
        for term in terms
    )


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """Kubernetes' matching: the same key (an empty key with Exists: every key), the same
    effect (none: every effect), and with Equal (the default) the same value."""
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if not key and operator != "Exists":
        return False
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(node: Obj, pod: Obj, effects: tuple[str, ...]) -> list[Obj]:
    """The node's taints of `effects` that none of the pod's tolerations matches."""
    tolerations = pod["spec"].get("tolerations") or []
    return [
        taint
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations)
    ]


def node_is_ready(node: Obj) -> bool:
    ready = any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )
    return ready and not node["spec"].get("unschedulable")


def fake_ip(name: str) -> str:
    digest = sum(name.encode())
    return f"10.0.{digest % 250}.{(digest // 250) % 250 + 1}"


def _addresses(
    name: str, zone: str, public: bool, external: str | None = None
) -> list[dict[str, str]]:
    """A node's addresses as the EC2 cloud provider reports them (the order EKS shows),
    with EC2's DNS names for the zone's region. `public`: a made-up public address (a node
    group in a public subnet); `external`: EC2's own public address of the instance."""
    region = zone[:-1]
    internal_domain, public_domain = (
        ("ec2.internal", "compute-1.amazonaws.com")
        if region == "us-east-1"
        else (f"{region}.compute.internal", f"{region}.compute.amazonaws.com")
    )
    internal = fake_ip(name)
    addresses = [
        {"type": "InternalIP", "address": internal},
        {"type": "InternalDNS", "address": f"ip-{internal.replace('.', '-')}.{internal_domain}"},
        {"type": "Hostname", "address": name},
    ]
    if public and external is None:
        digest = sum(name.encode()) * 7
        external = f"54.{digest % 250 + 1}.{(digest // 250) % 250}.{len(name) + 10}"
    if external is not None:
        addresses[1:1] = [
            {"type": "ExternalIP", "address": external},
            {"type": "ExternalDNS", "address": f"ec2-{external.replace('.', '-')}.{public_domain}"},
        ]
    return addresses
