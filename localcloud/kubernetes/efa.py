"""EFA interfaces as the stand-in's kubelet and scheduler count them: the extended resource
`vpc.amazonaws.com/efa` that the EFA device plugin advertises on an EFA-capable node (its
allocatable, from the node shape: nodes.py), requested by a multinode reservation's
whole-node pods (gpudev/cluster/fabric.py). Like every extended resource, a pod gets only
what the node has left: the scheduler passes over a node short of it (`Insufficient
vpc.amazonaws.com/efa`) and the kubelet rejects a pod bound there by nodeName
(`OutOfvpc.amazonaws.com/efa`), as they do for nvidia.com/gpu."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
EFA = "vpc.amazonaws.com/efa"


def efa_request(pod: Obj) -> int:
    """The EFA interfaces a pod's containers ask for (requests, else limits)."""
    total = 0
    for container in pod["spec"].get("containers", []):
        resources = container.get("resources") or {}
        asked = (resources.get("requests") or {}).get(EFA) or (resources.get("limits") or {}).get(
            EFA, 0
        )
        total += int(asked)
    return total


def allocatable_efa(node: Obj) -> int:
    return int(node["status"]["allocatable"].get(EFA, 0))


def efa_in_use(pods: list[Obj], holds: Any) -> dict[str, int]:
    """EFA interfaces in use per node: every pod `holds(pod)` says holds its node's."""
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and holds(pod):
            used[node] = used.get(node, 0) + efa_request(pod)
    return used


def kubelet_rejection(wanted: int, used: int, capacity: int) -> tuple[str, str]:
    """The reason and message the kubelet rejects a pod short of EFA interfaces with."""
    return (
        f"OutOf{EFA}",
        f"Pod was rejected: Node didn't have enough resource: {EFA}, "
        f"requested: {wanted}, used: {used}, capacity: {capacity}",
    )


def scheduling_failure(nodes: int, short: int) -> str:
    """kube-scheduler's FailedScheduling message when `short` nodes lacked EFA interfaces
    (the others were ruled out for GPUs, selectors or taints)."""
    others = nodes - short
    rest = f", {others} node(s) didn't match Pod's node affinity/selector" if others else ""
    return (
        f"0/{nodes} nodes are available: {short} Insufficient {EFA}{rest}. preemption: "
        f"0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling."
    )
