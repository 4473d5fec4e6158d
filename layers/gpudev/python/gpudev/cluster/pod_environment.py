"""A dev pod's share of its node and its environment (reference §7): requests and limits,
the thread counts that follow from them, NCCL and Hugging Face settings, and torchrun's
variables. The startup script hands this environment to every SSH session."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.names import Names, Placement
from gpudev.cluster.vocabulary import GPU_RESOURCE
from gpudev.cluster.workspace import WRITABLE_LAYER_GIB, ephemeral_storage_gib
from gpudev.models import GpuType, Reservation

RENDEZVOUS_PORT = 29500
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "MAX_JOBS",
    "CMAKE_BUILD_PARALLEL_LEVEL",
    "GPU_DEV_THREAD_COUNT",
)
TORCHRUN_VARIABLES = ("NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR", "MASTER_PORT")


def pod_resources_and_environment(
    reservation: Reservation, gpu_type: GpuType, placement: Placement, persistent_home: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    per_node = 0 if gpu_type.is_cpu_only else reservation.gpu_count // reservation.total_nodes
    resources, threads = _resources(gpu_type, per_node)
    env = {
        "GPU_DEV_RESERVATION_ID": str(reservation.reservation_id),
        "GPU_DEV_USER_ID": reservation.user_id,
        "GPU_TYPE": gpu_type.gpu_type.upper(),
        "GPU_DEV_PROFILING": "true" if reservation.profiling else "false",
        "GPU_DEV_PERSISTENT_HOME": "true" if persistent_home else "false",
        "HF_HOME": "/workspace/.cache/huggingface",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NCCL_DEBUG": "INFO",
        "NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        **dict.fromkeys(THREAD_VARIABLES, str(threads)),
        "MAKEFLAGS": f"-j{threads}",
    }
    return resources, env | torchrun_environment(reservation, placement.rank, max(1, per_node))


def torchrun_environment(reservation: Reservation, rank: int, gpus: int) -> dict[str, str]:
    """torchrun's conventions, never torch.distributed's process-level RANK/WORLD_SIZE
    (torchrun sets those per process): NNODES, NODE_RANK, NPROC_PER_NODE and, multinode,
    MASTER_ADDR/MASTER_PORT (rank 0 behind the headless service). The same values as
    PET_* (torchrun reads PET_<OPTION> for each option not given on its command line),
    so a bare `torchrun train.py` on every node starts the whole job (README)."""
    names = Names.of(reservation)
    env = {
        "NNODES": str(reservation.total_nodes),
        "NODE_RANK": str(rank),
        "NPROC_PER_NODE": str(gpus),
    }
    if reservation.total_nodes > 1:
        peers = [
            f"{names.pod(peer)}.{names.headless_service}" for peer in range(reservation.total_nodes)
        ]
        env |= {"MASTER_ADDR": peers[0], "MASTER_PORT": str(RENDEZVOUS_PORT)}
        env["GPU_DEV_PEERS"] = ",".join(peers)
    return env | {f"PET_{name}": env[name] for name in TORCHRUN_VARIABLES if name in env}


def _resources(gpu_type: GpuType, gpus: int) -> tuple[dict[str, Any], int]:
    """Requests, limits and the thread count: the GPU share of the node (reference §7), and
    the local disk (cluster/workspace.py): the kubelet evicts a pod past its ephemeral-storage
    limit. The request is the writable layer only, so a node of a cluster whose disks are
    smaller than the cluster stack's still admits the pod (the limit still holds)."""
    storage = {
        "requests": {"ephemeral-storage": f"{WRITABLE_LAYER_GIB}Gi"},
        "limits": {"ephemeral-storage": f"{ephemeral_storage_gib(gpus)}Gi"},
    }
    if gpu_type.is_cpu_only:
        threads = max(1, gpu_type.cpus - 2)
        return {
            "requests": {"cpu": "2", "memory": "4Gi"} | storage["requests"],
            "limits": {"cpu": str(threads), "memory": f"{gpu_type.memory_gb - 2}Gi"}
            | storage["limits"],
        }, threads
    ratio = gpus / gpu_type.max_gpus
    threads = max(1, min(gpu_type.cpus, int(gpu_type.cpus * ratio * 1.5)))
    return {
        "requests": {
            GPU_RESOURCE: str(gpus),
            "cpu": str(max(1, int(gpu_type.cpus * ratio * 0.9))),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio * 0.9))}Gi",
        }
        | storage["requests"],
        "limits": {
            GPU_RESOURCE: str(gpus),
            "cpu": str(threads),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio))}Gi",
        }
        | storage["limits"],
    }, threads
