"""The Kubernetes objects of a reservation, as plain manifests (reference §7, minus exec).

Everything carries the label gpu-dev/reservation=<id>, which is how tear down finds it. The
pod is controlled declaratively: a ConfigMap (expiry, warning, Jupyter) and a Secret (SSH
keys, Jupyter token) are mounted into it and its startup script (`startup.sh`, shipped
beside this module) applies them; nobody needs pods/exec.

Isolation (docs/architecture.md "Security model"): the pod runs under the RuntimeDefault
seccomp profile with no service-account token and without privilege escalation; only a
profiling reservation gets CAP_SYS_ADMIN, and it lives in its own namespace because Pod
Security `baseline` (enforced on gpu-dev) refuses that capability. A per-reservation
NetworkPolicy lets the reservation's own pods reach each other and nobody else's.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpudev.cluster.home_listing import LISTING_FINALIZER, listing_hook
from gpudev.cluster.names import Names, Placement, collaborator_account
from gpudev.cluster.vocabulary import (
    GPU_RESOURCE,
    GPU_TYPE_LABEL,
    RANK_LABEL,
    RESERVATION_LABEL,
    USER_LABEL,
    label_value,
)
from gpudev.models import GpuType, Reservation

RENDEZVOUS_PORT = 29500
JUPYTER_PORT = 8888
# Capabilities: the runtime's default set minus NET_RAW (raw sockets: spoofing, ARP tricks
# on the node's network), plus SYS_ADMIN for profiling only (perf counters, Nsight).
DROPPED_CAPABILITIES = ["NET_RAW"]
PROFILING_CAPABILITIES = ["SYS_ADMIN"]
STARTUP_SCRIPT = Path(__file__).with_name("startup.sh")
# Ready means sshd answers: the kubelet connects to port 22 and the pod is Ready (and the
# reservation active) only once it succeeds, after the startup script installed sshd.
SSH_READINESS_PROBE = {
    "tcpSocket": {"port": "ssh"},
    "initialDelaySeconds": 5,
    "periodSeconds": 5,
    "timeoutSeconds": 3,
    "failureThreshold": 3,
}


@cache
def startup_script() -> str:
    """The pod's command, run by `bash -c` (read once per execution environment)."""
    return STARTUP_SCRIPT.read_text()


def labels(reservation: Reservation, **extra: str) -> dict[str, str]:
    return {
        "app": "gpu-dev-pod",
        RESERVATION_LABEL: str(reservation.reservation_id),
        USER_LABEL: label_value(reservation.user_id),
        **extra,
    }


def metadata(reservation: Reservation, name: str, **extra: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": labels(reservation, **extra),
        "annotations": {USER_LABEL: reservation.user_id},
    }


def control_config_map(
    reservation: Reservation, expires_at: str, warning_level: int | None, warning_text: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(reservation, Names.of(reservation).control),
        "data": {
            "expires_at": expires_at,
            "warning_level": "" if warning_level is None else str(warning_level),
            "warning_text": warning_text,
            "jupyter": "true" if reservation.jupyter_enabled else "false",
        },
    }


def keys_secret(
    reservation: Reservation, authorized_keys: str, added_users: dict[str, str]
) -> dict[str, Any]:
    """SSH keys and the Jupyter token. The owner's keys open the `dev` account; each added
    GitHub user gets an account of their own (`user.<account>`, see collaborator_account),
    so nobody shares a session, a home or an agent."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata(reservation, Names.of(reservation).keys),
        "stringData": {
            "authorized_keys": authorized_keys,
            "jupyter_token": reservation.jupyter_token or "",
            **{f"user.{collaborator_account(login)}": keys for login, keys in added_users.items()},
        },
    }


def ssh_service(reservation: Reservation) -> dict[str, Any]:
    names = Names.of(reservation)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(reservation, names.ssh_service),
        "spec": {
            "type": "NodePort",
            "externalTrafficPolicy": "Local",
            "selector": {RESERVATION_LABEL: str(reservation.reservation_id), RANK_LABEL: "0"},
            "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}],
        },
    }


def jupyter_service(reservation: Reservation) -> dict[str, Any]:
    names = Names.of(reservation)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(reservation, names.jupyter_service, **{"gpu-dev/jupyter": "true"}),
        "spec": {
            "type": "NodePort",
            "externalTrafficPolicy": "Local",
            "selector": {RESERVATION_LABEL: str(reservation.reservation_id), RANK_LABEL: "0"},
            "ports": [{"name": "jupyter", "port": JUPYTER_PORT, "targetPort": JUPYTER_PORT}],
        },
    }


def headless_service(reservation: Reservation) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(reservation, Names.of(reservation).headless_service),
        "spec": {
            "clusterIP": "None",
            "selector": {RESERVATION_LABEL: str(reservation.reservation_id)},
            "ports": [{"name": "torch-rendezvous", "port": RENDEZVOUS_PORT}],
        },
    }


def network_policy(reservation: Reservation) -> dict[str, Any]:
    """The reservation's pods may reach each other, on every port, and no other pod may
    reach them (the namespace's policies in deploy/kubernetes/network-policies.yaml deny
    everything else and let SSH and Jupyter in from outside the cluster only). Every port,
    not just SSH and the rendezvous port 29500: NCCL's bootstrap and socket transport and
    gloo listen on ephemeral ports, so a port list would break multinode jobs."""
    own_pods = {
        "podSelector": {"matchLabels": {RESERVATION_LABEL: str(reservation.reservation_id)}}
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(reservation, Names.of(reservation).network_policy),
        "spec": {
            **own_pods,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [own_pods]}],
            "egress": [{"to": [own_pods]}],
        },
    }


def container_security(profiling: bool) -> dict[str, Any]:
    """No privilege escalation (setuid binaries and file capabilities stay inert: the
    startup script runs as root and only ever drops to users, as sshd does), except for
    profiling: CAP_SYS_ADMIN is effective only for root, so the dev user needs sudo to
    use it, and the API server refuses allowPrivilegeEscalation=false with SYS_ADMIN."""
    if profiling:
        return {"capabilities": {"add": PROFILING_CAPABILITIES, "drop": DROPPED_CAPABILITIES}}
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": DROPPED_CAPABILITIES}}


def _resources(gpu_type: GpuType, gpus: int) -> tuple[dict[str, Any], int]:
    """Requests, limits and the thread count: the GPU share of the node (reference §7)."""
    if gpu_type.is_cpu_only:
        threads = max(1, gpu_type.cpus - 2)
        return {
            "requests": {"cpu": "2", "memory": "4Gi"},
            "limits": {"cpu": str(threads), "memory": f"{gpu_type.memory_gb - 2}Gi"},
        }, threads
    ratio = gpus / gpu_type.max_gpus
    threads = max(1, min(gpu_type.cpus, int(gpu_type.cpus * ratio * 1.5)))
    return {
        "requests": {
            GPU_RESOURCE: str(gpus),
            "cpu": str(max(1, int(gpu_type.cpus * ratio * 0.9))),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio * 0.9))}Gi",
        },
        "limits": {
            GPU_RESOURCE: str(gpus),
            "cpu": str(threads),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio))}Gi",
        },
    }, threads


def pod(
    reservation: Reservation,
    gpu_type: GpuType,
    placement: Placement,
    image: str,
    home_claim: str | None = None,
) -> dict[str, Any]:
    """`home_claim`: the claim on the named disk, mounted at /home/dev by pod 0 only."""
    names = Names.of(reservation)
    persistent = home_claim is not None and placement.rank == 0
    per_node = 0 if gpu_type.is_cpu_only else reservation.gpu_count // reservation.total_nodes
    resources, threads = _resources(gpu_type, per_node)
    env = {
        "GPU_DEV_RESERVATION_ID": str(reservation.reservation_id),
        "GPU_DEV_USER_ID": reservation.user_id,
        "GPU_TYPE": gpu_type.gpu_type.upper(),
        "GPU_DEV_PROFILING": "true" if reservation.profiling else "false",
        "GPU_DEV_PERSISTENT_HOME": "true" if persistent else "false",
        "HF_HOME": "/workspace/.cache/huggingface",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NCCL_DEBUG": "INFO",
        "NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        **{
            variable: str(threads)
            for variable in (
                "OMP_NUM_THREADS",
                "MKL_NUM_THREADS",
                "OPENBLAS_NUM_THREADS",
                "NUMEXPR_MAX_THREADS",
                "MAX_JOBS",
                "CMAKE_BUILD_PARALLEL_LEVEL",
                "GPU_DEV_THREAD_COUNT",
            )
        },
        "MAKEFLAGS": f"-j{threads}",
    }
    if reservation.total_nodes > 1:
        peers = [
            f"{names.pod(rank)}.{names.headless_service}" for rank in range(reservation.total_nodes)
        ]
        env |= {
            "MASTER_ADDR": peers[0],
            "MASTER_PORT": str(RENDEZVOUS_PORT),
            "RANK": str(placement.rank),
            "NODE_RANK": str(placement.rank),
            "WORLD_SIZE": str(reservation.total_nodes),
            "GPU_DEV_PEERS": ",".join(peers),
        }
    spec: dict[str, Any] = {
        "nodeName": placement.node_name,
        "nodeSelector": {GPU_TYPE_LABEL: gpu_type.gpu_type},
        "hostname": names.pod(placement.rank),
        "subdomain": names.headless_service,
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 10,
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "gpu-dev",
                "image": image,
                "command": ["/bin/bash", "-c", startup_script()],
                "ports": [
                    {"name": "ssh", "containerPort": 22},
                    {"name": "jupyter", "containerPort": JUPYTER_PORT},
                    {"name": "rendezvous", "containerPort": RENDEZVOUS_PORT},
                ],
                "readinessProbe": SSH_READINESS_PROBE,
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": resources,
                "securityContext": container_security(reservation.profiling),
                "volumeMounts": [
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    {"name": "workspace", "mountPath": "/workspace"},
                    {"name": "dev-home", "mountPath": "/home/dev"},
                    {"name": "control", "mountPath": "/etc/gpu-dev/control", "readOnly": True},
                    {"name": "keys", "mountPath": "/etc/gpu-dev/keys", "readOnly": True},
                ],
            }
        ],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
            {"name": "workspace", "emptyDir": {"sizeLimit": "500Gi"}},
            {"name": "dev-home", "persistentVolumeClaim": {"claimName": home_claim}}
            if persistent
            else {"name": "dev-home", "emptyDir": {}},
            {"name": "control", "configMap": {"name": names.control}},
            {"name": "keys", "secret": {"secretName": names.keys, "defaultMode": 0o400}},
        ],
    }
    if persistent:  # the disk's listing, written as it stops (cluster/home_listing.py)
        spec["containers"][0] |= listing_hook()
    if not gpu_type.is_cpu_only:
        spec["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    meta = metadata(reservation, names.pod(placement.rank), **{RANK_LABEL: str(placement.rank)})
    if persistent:
        meta["finalizers"] = [LISTING_FINALIZER]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
