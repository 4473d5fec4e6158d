"""The words we share with the cluster, defined once: label keys, resource names, the kinds
of object a reservation owns, and the node and pod facts the planners read.

Pure and light (no `kubernetes` import): the availability rules and the allocator read
`Node`/`Pod`, the manifests are built from the labels; only the clients talk to the API.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

# The extended resource the NVIDIA device plugin advertises (and taints GPU nodes with).
GPU_RESOURCE = "nvidia.com/gpu"
# Node label naming the node's GPU type (as in gpu_types.gpu_type); our pods select on it.
GPU_TYPE_LABEL = "GpuType"
# Nodes dedicated to profiling reservations: labelled `<key>=true` and tainted
# `<key>=true:NoSchedule` by the operator (docs/security.md "Isolation"). A node with
# either is dedicated: the allocator puts profiling reservations only there (when the type
# has some) and nothing else; their pods select the label and tolerate the taint.
PROFILING_LABEL = "gpu-dev.pytorch.org/profiling"
# Every object of a reservation carries it (value: the reservation id); tear down and the
# sweeper find objects by it, and never by name.
RESERVATION_LABEL = "gpu-dev/reservation"
USER_LABEL = "gpu-dev/user"  # a label (sanitised by label_value) and an annotation (as is)
RANK_LABEL = "gpu-dev/rank"  # the pod's rank in a multinode reservation
# What tear down deletes by label: resources as the API server names them;
# networkpolicies are networking.k8s.io/v1, the rest core/v1. The claim on a disk's volume
# comes after the pods (its pvc-protection finalizer holds it until they are gone); its
# PersistentVolume is cluster-scoped (cluster/volumes.py).
KINDS = ("pods", "services", "configmaps", "secrets", "networkpolicies", "persistentvolumeclaims")
# The EBS CSI driver, and the node label of the zone a node (and its volumes) are in.
EBS_CSI_DRIVER = "ebs.csi.aws.com"
ZONE_LABEL = "topology.kubernetes.io/zone"
# The node label of the cluster placement group a node's node group launches into
# (cdk_app/fabric.py); with the zone, a node's fabric (`fabric_of`).
PLACEMENT_GROUP_LABEL = "gpu-dev/placement-group"
# The extended resource the EFA device plugin advertises: a node's EFA interfaces.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# Pods that hold (or are about to hold) their node's resources.
LIVE_POD_PHASES = frozenset({"Running", "Pending"})
CRASH_LOOP = "CrashLoopBackOff"  # a container waits for its restart after failing again
# How the pod's startup script (startup.sh) begins the termination message it leaves when it
# cannot start the pod: never a disk's listing (cluster/home_listing.py).
STARTUP_FAILED = "gpu-dev startup failed: "


@dataclass(frozen=True)
class Node:
    name: str
    gpu_type: str | None
    ready: bool
    unschedulable: bool
    allocatable_gpus: int
    # a NoSchedule/NoExecute taint other than GPU_RESOURCE's and PROFILING_LABEL's
    tainted: bool = False
    internal_ip: str | None = None
    # ExternalIP, else ExternalDNS: where users outside the VPC reach the node (None in a
    # private subnet).
    external_address: str | None = None
    profiling: bool = False  # dedicated to profiling: labelled or tainted PROFILING_LABEL
    fabric: str = ""  # its zone and placement group (`fabric_of`)
    # Its EC2 instance (from spec.providerID `aws:///<zone>/<id>`) and its placement-group
    # label: an EFA node needs an Elastic IP (cluster/addresses.py).
    instance_id: str | None = None
    placement_group: str | None = None

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.unschedulable


@dataclass(frozen=True)
class Pod:
    name: str
    node_name: str | None
    phase: str
    gpu_requests: int
    reservation_id: str | None = None  # RESERVATION_LABEL, on our pods
    terminating_until: float | None = None  # deleted: gone by then (epoch seconds)
    # Its health, as the kubelet reports it (the availability updater watches our pods).
    restarts: int = 0  # every container's restartCount, summed
    last_oom_at: datetime | None = None  # the newest lastState.terminated OOMKilled
    crash_looping: bool = False  # a container waits in CrashLoopBackOff
    reason: str | None = None  # status.reason, e.g. "Evicted" (phase Failed)
    message: str | None = None  # status.message
    namespace: str | None = None


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NOT_IN_LABEL_VALUE = re.compile(r"[^-A-Za-z0-9_.]+")


def label_value(raw: str) -> str:
    """`raw` as a valid Kubernetes label value (at most 63 of [-A-Za-z0-9_.], alphanumeric
    at both ends). A valid value is kept as it is; any other (an SSO session name such as
    `carol@example.com`) becomes a readable form plus a hash of the original, so two
    different users never share a value. The original goes into an annotation."""
    if _LABEL_VALUE.match(raw) and len(raw) <= 63:
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
    readable = _NOT_IN_LABEL_VALUE.sub("_", raw)[:52].strip("-_.")
    return f"{readable}-{digest}" if readable else digest


def fabric_of(labels: dict[str, str]) -> str:
    """A node's fabric: `<zone>/<placement group>` from its labels. EFA never crosses a
    zone, and a cluster placement group keeps its nodes close, so a multinode reservation is
    granted nodes of one fabric only (allocation/pool.py). A node without the placement-group
    label shares a fabric with the other unlabelled nodes of its zone."""
    return f"{labels.get(ZONE_LABEL, '')}/{labels.get(PLACEMENT_GROUP_LABEL, '')}"
