"""EFA for a multinode reservation's pods (docs/multinode.md): a whole-node pod of an
EFA-capable GPU type requests every EFA interface of its node (`vpc.amazonaws.com/efa`, the
count in the GPU type catalogue, `gpu_types.efa_interfaces`) and gets the environment NCCL
and libfabric need. A partial-node pod, a single-node reservation and a type without EFA
get nothing: their NCCL traffic stays on TCP.

Not here, on purpose: IPC_LOCK. Pod Security `baseline` (enforced on gpu-dev) refuses the
capability, and EFA's memory registration needs only the locked-memory limit, which the
EKS-optimized accelerated AMI's container runtime already sets to unlimited (the startup
hook, node_setup.sh, warns in the pod when it is not).
"""

from __future__ import annotations

from typing import Any

from gpudev.cluster.vocabulary import EFA_RESOURCE
from gpudev.models import GpuType, Reservation

# Where the EFA installer and AWS's deep learning images put the aws-ofi-nccl plugin
# (libnccl-net.so) and libfabric: node_setup.sh puts those present on LD_LIBRARY_PATH.
PLUGIN_PATH = "/opt/amazon/ofi-nccl/lib:/opt/aws-ofi-nccl/lib:/opt/amazon/efa/lib"
EFA_ENVIRONMENT = {
    "FI_PROVIDER": "efa",  # libfabric: EFA only, never a slower provider in its place
    # GPUDirect RDMA: every EFA type in the catalogue (p4d, p4de, p5, p5e, p5en, p6) has it
    "FI_EFA_USE_DEVICE_RDMA": "1",
    "FI_EFA_FORK_SAFE": "1",  # dataloader workers fork after memory was registered
    "GPU_DEV_OFI_NCCL_PATH": PLUGIN_PATH,
    # NCCL_SOCKET_IFNAME (eth0, set for every pod) is then NCCL's bootstrap only: the
    # collectives go over the OFI plugin (`NCCL_DEBUG=INFO` says `NET/OFI`)
}


def efa_interfaces(reservation: Reservation, gpu_type: GpuType) -> int:
    """The EFA interfaces a pod of the reservation requests: all of its node's when it is a
    whole-node pod of a multinode reservation on an EFA-capable type, else none."""
    if reservation.total_nodes < 2 or gpu_type.is_cpu_only:
        return 0
    whole_node = reservation.gpu_count // reservation.total_nodes == gpu_type.max_gpus
    return gpu_type.efa_interfaces if whole_node else 0


def with_efa(
    resources: dict[str, Any], env: dict[str, str], interfaces: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """The container's resources and environment with `interfaces` EFA interfaces (as a
    request and an equal limit, as extended resources must be); unchanged for none."""
    if interfaces <= 0:
        return resources, env
    count = {EFA_RESOURCE: str(interfaces)}
    return {
        "requests": resources.get("requests", {}) | count,
        "limits": resources.get("limits", {}) | count,
    }, env | EFA_ENVIRONMENT
