"""The kubelet's admission of a pod bound to its node: it admits the pod only if the node's
allocatable GPUs minus those of the pods it admitted before (Terminating ones included:
their containers still hold the devices) cover the request; else the pod is Failed with
reason OutOfnvidia.com/gpu, as the real kubelet rejects it."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.nodes import GPU, gpu_request

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


def rejection_message(wanted: int, used: int, capacity: int) -> str:
    return (
        f"Pod was rejected: Node didn't have enough resource: {GPU}, "
        f"requested: {wanted}, used: {used}, capacity: {capacity}"
    )


def reject(pod: Obj, message: str) -> None:
    pod["status"].update(phase="Failed", reason=f"OutOf{GPU}", message=message)
