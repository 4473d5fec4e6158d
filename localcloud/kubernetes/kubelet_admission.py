"""The kubelet's admission of a pod bound to its node: it admits the pod only if the node's
allocatable GPUs minus those of the pods it admitted before (Terminating ones included:
their containers still hold the devices) cover the request; else the pod is Failed with
reason OutOfnvidia.com/gpu, as the real kubelet rejects it. Before that, as the real
kubelet's general predicates do for a pod bound by nodeName (the scheduler never saw it),
the node must match the pod's nodeSelector and required node affinity (else reason
NodeAffinity), and the pod must tolerate the node's NoExecute taints (else reason
TaintToleration; since Kubernetes 1.22). NoSchedule taints are the scheduler's alone: a pod
bound by nodeName runs despite them, as in Kubernetes."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.nodes import GPU, gpu_request, node_accepts, untolerated_taints

Obj = dict[str, Any]


def admitted(pod: Obj) -> bool:
    """The kubelet accepted the pod: it runs, or it waits (for its volumes, its image, its
    init containers) with container statuses."""
    status = pod["status"]
    return status.get("phase") == "Running" or bool(
        status.get("phase") == "Pending" and status.get("containerStatuses")
    )


def gpus_of_admitted_pods(pods: list[Obj]) -> dict[str, int]:
    """GPUs in use per node as the kubelet counts them: every admitted pod, Terminating ones
    included (their containers still hold the devices)."""
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and admitted(pod):
            used[node] = used.get(node, 0) + gpu_request(pod)
    return used


def predicate_failure(node: Obj, pod: Obj) -> tuple[str, str] | None:
    """The reason and message the kubelet rejects a pod bound to `node` with, or None."""
    if not node_accepts(node, pod):
        return (
            "NodeAffinity",
            "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node "
            "affinity/selector",
        )
    taints = untolerated_taints(node, pod, ("NoExecute",))
    if taints:
        taint = taints[0]
        return (
            "TaintToleration",
            "Pod was rejected: Predicate TaintToleration failed: node(s) had untolerated taint "
            f"{{{taint.get('key')}: {taint.get('value', '')}}}",
        )
    return None


def rejection_message(wanted: int, used: int, capacity: int) -> str:
    return (
        f"Pod was rejected: Node didn't have enough resource: {GPU}, "
        f"requested: {wanted}, used: {used}, capacity: {capacity}"
    )


def reject(pod: Obj, message: str, reason: str = f"OutOf{GPU}") -> None:
    pod["status"].update(phase="Failed", reason=reason, message=message)
