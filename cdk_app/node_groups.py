"""Which managed node groups the cluster stack creates: CDK context `gpudev:nodeGroups` maps a
GPU type of the catalogue to its sizes; each group's name, instance type, AMI, label and taint
follow from the type, so they are what the rest of gpu-dev expects:

- the name is the availability updater's prefix for the type (`gpudev/availability/
  compute.py`): `pytorch-gpu-dev-gpu-nodes-<type>`, CPU types `pytorch-gpu-dev-cpu-nodes-
  <type>`; EKS names the group's Auto Scaling group `eks-<name>-<uuid>` and tags it
  `eks:nodegroup-name=<name>`, which the updater counts by;
- nodes are labelled `GpuType=<type>` (our pods select on it); GPU nodes are tainted
  `nvidia.com/gpu:NoSchedule`, which GPU pods tolerate (`gpudev/cluster/objects.py`), so only
  they land there; CPU nodes carry no taint and also run the system pods.

    cdk deploy GpuDevCluster -c gpudev:createCluster=true \\
      -c 'gpudev:nodeGroups={"t4": {"min": 0, "max": 2}, "cpu-x86": {"min": 1, "max": 2}}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from constructs import Construct

from gpudev.availability.compute import group_prefixes
from gpudev.cluster.vocabulary import GPU_RESOURCE, GPU_TYPE_LABEL
from gpudev.cluster.workspace import node_disk_gib as disk_for_gpus

NODE_GROUPS_CONTEXT = "gpudev:nodeGroups"
DEFAULT_NODE_GROUPS: dict[str, dict[str, int]] = {
    "t4": {"min": 0, "max": 2},  # scaled to 0: raise it when users need T4s
    "cpu-x86": {"min": 1, "max": 2},  # CPU reservations and the system pods (CoreDNS, …)
}


@dataclass(frozen=True)
class CatalogueEntry:
    instance_type: str
    gpus_per_node: int
    arm: bool = False


# The GPU catalogue's instance types (migrations/0002_gpu_type_catalogue.sql; a unit test
# keeps the two equal).
CATALOGUE: dict[str, CatalogueEntry] = {
    "t4": CatalogueEntry("g4dn.12xlarge", 4),
    "t4-small": CatalogueEntry("g4dn.2xlarge", 1),
    "l4": CatalogueEntry("g6.12xlarge", 4),
    "a10g": CatalogueEntry("g5.12xlarge", 4),
    "a100": CatalogueEntry("p4d.24xlarge", 8),
    "h100": CatalogueEntry("p5.48xlarge", 8),
    "h200": CatalogueEntry("p5e.48xlarge", 8),
    "b200": CatalogueEntry("p6-b200.48xlarge", 8),
    "cpu-x86": CatalogueEntry("c7i.8xlarge", 0),
    "cpu-arm": CatalogueEntry("c7g.8xlarge", 0, arm=True),
}


def node_disk_gib(entry: CatalogueEntry) -> int:
    """The root volume of the type's nodes: room for every pod's /workspace and writes at
    their limits (gpudev/cluster/workspace.py), so filling one evicts that pod only."""
    return disk_for_gpus(entry.gpus_per_node)


@dataclass(frozen=True)
class NodeGroupSpec:
    gpu_type: str
    entry: CatalogueEntry
    min_size: int
    max_size: int
    desired_size: int

    @property
    def is_cpu(self) -> bool:
        return self.entry.gpus_per_node == 0

    @property
    def name(self) -> str:
        prefixes = group_prefixes(self.gpu_type, self.is_cpu)
        # GPU: the one prefix; CPU: `pytorch-gpu-dev-cpu-nodes-<type>`, the prefix of its own
        return prefixes[1] if self.is_cpu else prefixes[0]

    @property
    def ami_type(self) -> str:
        if not self.is_cpu:
            return "AL2023_x86_64_NVIDIA"  # the NVIDIA driver and container toolkit
        return "AL2023_ARM_64_STANDARD" if self.entry.arm else "AL2023_x86_64_STANDARD"

    @property
    def labels(self) -> dict[str, str]:
        return {GPU_TYPE_LABEL: self.gpu_type}

    @property
    def taints(self) -> list[dict[str, str]]:
        return [] if self.is_cpu else [{"key": GPU_RESOURCE, "effect": "NO_SCHEDULE"}]


def node_group_specs(scope: Construct) -> list[NodeGroupSpec]:
    raw = scope.node.try_get_context(NODE_GROUPS_CONTEXT)
    if raw is None or raw == "":
        raw = DEFAULT_NODE_GROUPS
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ValueError(f"context {NODE_GROUPS_CONTEXT}: not JSON ({error})") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(
            f'context {NODE_GROUPS_CONTEXT}: an object {{"<type>": {{"min": 0, "max": 2}}}}; '
            f"got {raw!r}"
        )
    specs = [_spec(str(gpu_type), sizes) for gpu_type, sizes in raw.items()]
    if not any(spec.is_cpu and spec.min_size >= 1 for spec in specs):
        raise ValueError(
            f"context {NODE_GROUPS_CONTEXT}: needs a CPU group (cpu-x86 or cpu-arm) with "
            "min 1 or more: GPU nodes are tainted, so the system pods (CoreDNS, the EBS CSI "
            "controller) run on CPU nodes"
        )
    return specs


def _spec(gpu_type: str, sizes: object) -> NodeGroupSpec:
    key = f"context {NODE_GROUPS_CONTEXT}: {gpu_type}"
    if gpu_type not in CATALOGUE:
        raise ValueError(f"{key}: not in the GPU catalogue ({', '.join(CATALOGUE)})")
    if not isinstance(sizes, dict) or set(sizes) - {"min", "max", "desired"}:
        raise ValueError(f'{key}: {{"min": n, "max": n[, "desired": n]}}; got {sizes!r}')
    values = {name: sizes.get(name) for name in ("min", "max")}
    values["desired"] = sizes.get("desired", values["min"])
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values.values()):
        raise ValueError(f"{key}: min, max (and desired) are whole numbers; got {sizes!r}")
    low, high, desired = values["min"], values["max"], values["desired"]
    assert isinstance(low, int) and isinstance(high, int) and isinstance(desired, int)
    if not 0 <= low <= desired <= high or high < 1:
        raise ValueError(f"{key}: needs 0 <= min <= desired <= max and max >= 1; got {sizes!r}")
    return NodeGroupSpec(gpu_type, CATALOGUE[gpu_type], low, high, desired)
