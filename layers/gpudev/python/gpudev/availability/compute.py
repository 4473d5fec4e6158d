"""The availability rules of seeds 000/001, as a pure function of one Auto Scaling listing,
one node list and one pod list (reference-behaviour.md §6.2; the reference lists pods once
per node, we list them once per run).

Per active type:
- groups: Auto Scaling groups by their name, or, for an EKS managed node group (whose group
  EKS names `eks-<node group>-<uuid>`), by the node group's name from the group's
  `eks:nodegroup-name` tag (`counted_group_name`); names starting with
  `pytorch-gpu-dev-gpu-nodes-<type>` (CPU types: that prefix, then
  `pytorch-gpu-dev-cpu-nodes-<type>`, then `pytorch-gpu-dev-cpu-nodes`; the first prefix
  with matches wins). Unlike the reference, a group of a longer type name (`…-t4-small`) is
  not counted for the shorter one (`…-t4`): the longest matching type prefix owns a group.
- desired = Σ DesiredCapacity; running = Σ InService instances; total = running × GPUs per node
  (CPU: × 3 user slots).
- max nodes = Σ MaxSize, never less than desired or running: what the type's groups can ever
  hold, scaled up from zero included. No groups: 0, a type with no nodes (the API refuses
  requests for more nodes than this; the allocator ends queued ones, allocation/capacity_gone.py).
- nodes labelled `GpuType=<type>` that are Ready and not cordoned; free GPUs on a node =
  allocatable `nvidia.com/gpu` − Σ GPU requests of its Running/Pending pods (floored at 0);
  available = Σ free; full nodes = nodes with every GPU free; max reservable = min(4, full in
  one fabric) × 8 for h100/h200/b200/a100 with 8 GPUs per node (falling back to the largest
  single-node free count when that is 0), else the largest single-node free count. A fabric
  is a zone and placement group (`Node.fabric`): a multinode grant takes nodes of one only
  (allocation/pool.py), so the largest multinode request placeable now is that many nodes.
- CPU nodes: free slots = 3 − live `gpu-dev-*` pods on the node; max reservable 1 if any.
- Profiling (docs/security.md "Isolation"): nodes dedicated to it are not counted (an
  ordinary request never gets them), and a node with a live pod in the profiling namespace
  is held whole by it: nothing on it is free.
- Kubernetes unreachable: available = total, full nodes and max reservable 0 (seed rule).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudev.cluster.vocabulary import LIVE_POD_PHASES, Node, Pod
from gpudev.models import Availability

GROUP_NAME_PREFIX = "pytorch-gpu-dev-"
NODEGROUP_NAME_TAG = "eks:nodegroup-name"  # EKS tags a managed node group's Auto Scaling group

CPU_SLOTS_PER_NODE = 3
MULTINODE_TYPES = frozenset({"h100", "h200", "b200", "a100"})
MAX_MULTINODE_NODES = 4


@dataclass(frozen=True)
class GpuTypeConfig:
    gpu_type: str
    gpus_per_node: int  # 0 for CPU-only types

    @property
    def is_cpu(self) -> bool:
        return self.gpus_per_node == 0


@dataclass(frozen=True)
class ScalingGroup:
    name: str
    desired_capacity: int
    in_service: int
    max_size: int = 0


def counted_group_name(group: Mapping[str, Any]) -> str | None:
    """The name an Auto Scaling group (a DescribeAutoScalingGroups entry) is counted by: its
    own when it is gpu-dev's (`pytorch-gpu-dev-…`), else the managed node group's name it
    carries in its `eks:nodegroup-name` tag when that is gpu-dev's; None for other groups."""
    name = str(group["AutoScalingGroupName"])
    if name.startswith(GROUP_NAME_PREFIX):
        return name
    for tag in group.get("Tags") or []:
        if tag.get("Key") == NODEGROUP_NAME_TAG and str(tag.get("Value", "")).startswith(
            GROUP_NAME_PREFIX
        ):
            return str(tag["Value"])
    return None


def group_prefixes(gpu_type: str, is_cpu: bool) -> list[str]:
    if is_cpu:
        return [
            f"pytorch-gpu-dev-gpu-nodes-{gpu_type}",
            f"pytorch-gpu-dev-cpu-nodes-{gpu_type}",
            "pytorch-gpu-dev-cpu-nodes",
        ]
    return [f"pytorch-gpu-dev-gpu-nodes-{gpu_type}"]


def _groups_for(
    config: GpuTypeConfig, groups: list[ScalingGroup], all_types: list[GpuTypeConfig]
) -> list[ScalingGroup]:
    for prefix in group_prefixes(config.gpu_type, config.is_cpu):
        # A longer prefix of another type that also matches owns the group.
        longer = [
            p
            for other in all_types
            if other.gpu_type != config.gpu_type
            for p in group_prefixes(other.gpu_type, other.is_cpu)
            if len(p) > len(prefix) and p.startswith(prefix)
        ]
        matched = [
            g
            for g in groups
            if g.name.startswith(prefix) and not any(g.name.startswith(p) for p in longer)
        ]
        if matched:
            return matched
    return []


def compute_availability(
    types: Iterable[GpuTypeConfig],
    groups: list[ScalingGroup],
    nodes: list[Node] | None,
    pods: list[Pod] | None,
    profiling_namespace: str | None = None,
) -> list[Availability]:
    """`nodes`/`pods` None means Kubernetes could not be reached; `profiling_namespace`:
    where profiling pods run (each holds its node whole)."""
    all_types = list(types)
    used_gpus: dict[str, int] = defaultdict(int)
    dev_pods: dict[str, int] = defaultdict(int)
    held_whole: set[str] = set()
    for pod in pods or []:
        if pod.node_name and pod.phase in LIVE_POD_PHASES:
            used_gpus[pod.node_name] += pod.gpu_requests
            if pod.reservation_id is not None:  # a dev pod (not gpu-dev-prepuller-*)
                dev_pods[pod.node_name] += 1
            if profiling_namespace is not None and pod.namespace == profiling_namespace:
                held_whole.add(pod.node_name)
    nodes_by_type: dict[str, list[Node]] = defaultdict(list)
    for node in nodes or []:
        if node.gpu_type and node.schedulable and not node.profiling:
            nodes_by_type[node.gpu_type].append(node)

    results = []
    for config in all_types:
        matched = _groups_for(config, groups, all_types)
        desired = sum(g.desired_capacity for g in matched)
        running = sum(g.in_service for g in matched)
        max_nodes = max(sum(g.max_size for g in matched), desired, running)
        per_node = CPU_SLOTS_PER_NODE if config.is_cpu else config.gpus_per_node
        total = running * per_node
        available = full = max_reservable = 0
        if not matched:
            total = 0
        elif nodes is None:
            available = total
        elif config.is_cpu:
            available = sum(
                max(0, CPU_SLOTS_PER_NODE - dev_pods[n.name])
                for n in nodes_by_type[config.gpu_type]
                if n.name not in held_whole
            )
            full = available
            max_reservable = 1 if available > 0 else 0
        else:
            free = [
                (
                    0 if n.name in held_whole else max(0, n.allocatable_gpus - used_gpus[n.name]),
                    n.allocatable_gpus,
                    n.fabric,
                )
                for n in nodes_by_type[config.gpu_type]
            ]
            available = sum(f for f, _, _ in free)
            full_by_fabric: dict[str, int] = defaultdict(int)
            for f, capacity, fabric in free:
                if capacity > 0 and f == capacity:
                    full_by_fabric[fabric] += 1
            full = sum(full_by_fabric.values())
            single_node_max = max((f for f, _, _ in free), default=0)
            max_reservable = single_node_max
            if config.gpu_type in MULTINODE_TYPES and config.gpus_per_node == 8:
                together = max(full_by_fabric.values(), default=0)
                max_reservable = min(MAX_MULTINODE_NODES, together) * 8 or single_node_max
        results.append(
            Availability(
                gpu_type=config.gpu_type,
                total_cluster_gpus=total,
                available_gpus=available,
                max_reservable=max_reservable,
                full_nodes_available=full,
                running_instances=running,
                desired_capacity=desired,
                max_per_node=config.gpus_per_node,
                max_nodes=max_nodes,
                groups_found=bool(matched),
            )
        )
    return results
