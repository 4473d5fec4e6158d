"""The local disk a dev pod may fill: `/workspace` (an emptyDir) and the container's own
writes, sized per GPU so that the pods a node can hold never promise more than its disk.

The kubelet enforces both: an emptyDir past its `sizeLimit`, or a pod past its containers'
`ephemeral-storage` limit, is evicted (that pod alone, not its neighbours, as a full node
disk would do with DiskPressure). The cluster stack sizes each node group's root volume
from the same figures (`node_disk_gib`), so on its nodes the limits always fit; on a
cluster of your own, give GPU nodes at least that much disk (docs/operator-guide.md)."""

from __future__ import annotations

WORKSPACE_GIB_PER_GPU = 100  # /workspace per GPU of the pod (datasets, checkpoints, caches)
CPU_WORKSPACE_GIB = 10  # /workspace of a CPU reservation's pod
WRITABLE_LAYER_GIB = 20  # the container's own writes: pip and apt installs, /tmp, logs
SYSTEM_GIB = 100  # the OS, images (several GiB each) and the kubelet's eviction headroom
# CPU pods request 2 CPUs: a 32-vCPU CPU node (c7i/c7g.8xlarge) holds about 16 of them.
CPU_PODS_PER_NODE = 16


def workspace_gib(gpus: int) -> int:
    """/workspace's sizeLimit for a pod with `gpus` GPUs (0: a CPU pod)."""
    return gpus * WORKSPACE_GIB_PER_GPU if gpus else CPU_WORKSPACE_GIB


def ephemeral_storage_gib(gpus: int) -> int:
    """The container's ephemeral-storage limit: /workspace and its own writes."""
    return workspace_gib(gpus) + WRITABLE_LAYER_GIB


def node_disk_gib(gpus_per_node: int) -> int:
    """A node's root volume: the system, and every pod it can hold at its limit."""
    if gpus_per_node:
        return SYSTEM_GIB + gpus_per_node * (WORKSPACE_GIB_PER_GPU + WRITABLE_LAYER_GIB)
    return SYSTEM_GIB + CPU_PODS_PER_NODE * ephemeral_storage_gib(0)
