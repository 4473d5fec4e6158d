"""One node list and one pod list per call, whatever the cluster size.

Responses are read as raw JSON (`_preload_content=False`): turning 20,000 pods into the
client's model objects costs far more than the request itself, and we need a few fields.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gpudev.cluster.vocabulary import (
    CRASH_LOOP,
    GPU_RESOURCE,
    GPU_TYPE_LABEL,
    PLACEMENT_GROUP_LABEL,
    PROFILING_LABEL,
    RESERVATION_LABEL,
    Node,
    Pod,
    fabric_of,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# Failed pods are listed too (the planners count only LIVE_POD_PHASES): an evicted pod is
# Failed with reason Evicted, and the availability updater ends its reservation saying so.
LISTED_PODS = "status.phase!=Succeeded"
OOM_KILLED = "OOMKilled"
# Our pods tolerate these: GPU pods the device plugin's, profiling pods the profiling one
# (the allocator keeps everyone else off a profiling node).
TOLERATED_TAINTS = frozenset({GPU_RESOURCE, PROFILING_LABEL})


def _tainted(spec: dict[str, Any]) -> bool:
    return any(
        t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") not in TOLERATED_TAINTS
        for t in spec.get("taints") or []
    )


def _dedicated_to_profiling(item: dict[str, Any]) -> bool:
    """Labelled `PROFILING_LABEL=true`, or tainted with that key: either way the operator
    meant the node for profiling, and nobody else's pod should be bound there."""
    labels = item["metadata"].get("labels") or {}
    taints = (item.get("spec") or {}).get("taints") or []
    return labels.get(PROFILING_LABEL) == "true" or any(
        t.get("key") == PROFILING_LABEL for t in taints
    )


def _node(item: dict[str, Any]) -> Node:
    status = item.get("status", {})
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", [])
    )
    return Node(
        name=item["metadata"]["name"],
        gpu_type=(item["metadata"].get("labels") or {}).get(GPU_TYPE_LABEL),
        ready=ready,
        unschedulable=bool(item.get("spec", {}).get("unschedulable")),
        allocatable_gpus=int((status.get("allocatable") or {}).get(GPU_RESOURCE, 0)),
        tainted=_tainted(item.get("spec", {})),
        internal_ip=_address(status, "InternalIP"),
        external_address=_address(status, "ExternalIP") or _address(status, "ExternalDNS"),
        profiling=_dedicated_to_profiling(item),
        fabric=fabric_of(item["metadata"].get("labels") or {}),
        instance_id=_instance_id(item.get("spec", {}).get("providerID")),
        placement_group=(item["metadata"].get("labels") or {}).get(PLACEMENT_GROUP_LABEL),
    )


def _instance_id(provider_id: str | None) -> str | None:
    """`aws:///us-east-2a/i-0abc…` → `i-0abc…` (the EC2 cloud provider's form)."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    last = provider_id.rsplit("/", 1)[-1]
    return last if last.startswith("i-") else None


def _address(status: dict[str, Any], kind: str) -> str | None:
    return next((a["address"] for a in status.get("addresses", []) if a.get("type") == kind), None)


def _gpu_requests(container: dict[str, Any]) -> int:
    resources = container.get("resources") or {}
    # Extended resources given only as limits get equal requests (Kubernetes defaulting).
    value = (resources.get("requests") or {}).get(GPU_RESOURCE) or (
        resources.get("limits") or {}
    ).get(GPU_RESOURCE, 0)
    return int(value)


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _last_oom_at(statuses: list[dict[str, Any]]) -> datetime | None:
    killed = [
        _time(terminated.get("finishedAt")) or datetime.min.replace(tzinfo=UTC)
        for s in statuses
        if (terminated := (s.get("lastState") or {}).get("terminated") or {}).get("reason")
        == OOM_KILLED
    ]
    return max(killed, default=None)


def _pod(item: dict[str, Any]) -> Pod:
    spec, metadata = item.get("spec", {}), item["metadata"]
    status = item.get("status", {})
    statuses = status.get("containerStatuses") or []
    deletion = metadata.get("deletionTimestamp")
    return Pod(
        name=metadata["name"],
        node_name=spec.get("nodeName"),
        phase=status.get("phase", "Pending"),
        gpu_requests=sum(_gpu_requests(c) for c in spec.get("containers", [])),
        reservation_id=(metadata.get("labels") or {}).get(RESERVATION_LABEL),
        terminating_until=(
            datetime.fromisoformat(deletion.replace("Z", "+00:00")).timestamp()
            if deletion
            else None
        ),
        restarts=sum(int(s.get("restartCount") or 0) for s in statuses),
        last_oom_at=_last_oom_at(statuses),
        # an init container too: one run again after the pod's sandbox was recreated
        crash_looping=any(
            ((s.get("state") or {}).get("waiting") or {}).get("reason") == CRASH_LOOP
            for s in [*statuses, *(status.get("initContainerStatuses") or [])]
        ),
        reason=status.get("reason"),
        message=status.get("message"),
        namespace=metadata.get("namespace"),
    )


def list_nodes_and_pods(api_client: ApiClient) -> tuple[list[Node], list[Pod]]:
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(api_client)
    node_response: Any = core.list_node(_preload_content=False)
    pod_response: Any = core.list_pod_for_all_namespaces(
        field_selector=LISTED_PODS, _preload_content=False
    )
    nodes = json.loads(node_response.data)
    pods = json.loads(pod_response.data)
    return [_node(i) for i in nodes.get("items", [])], [_pod(i) for i in pods.get("items", [])]
