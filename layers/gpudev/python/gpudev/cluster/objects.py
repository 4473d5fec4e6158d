"""The Kubernetes objects of a reservation, as plain manifests (reference §7, minus exec).

Everything carries the label gpu-dev/reservation=<id>, which is how tear down finds it. The
pod is controlled declaratively: a ConfigMap (expiry, warnings, Jupyter) and a Secret (SSH
keys, sshd's host key, Jupyter token) are mounted into it and its startup script
(`startup.sh`, shipped beside this module) applies them; nobody needs pods/exec. Its
Services and NetworkPolicy are built in `cluster/network.py`, PersistentVolumes in
`cluster/volumes.py`.

Isolation (docs/security.md): the pod runs under the RuntimeDefault
seccomp profile with no service-account token and without NET_RAW (dev has sudo: root of
its own container, nothing more); only a profiling reservation gets CAP_SYS_ADMIN, and it
lives in its own namespace because Pod Security `baseline` (enforced on gpu-dev) refuses
that capability. A per-reservation NetworkPolicy lets the reservation's own pods reach each
other and nobody else's.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpudev.cluster import node_access
from gpudev.cluster.fabric import efa_interfaces, with_efa
from gpudev.cluster.home_listing import LISTING_FINALIZER, listing_hook
from gpudev.cluster.host_keys import HostKey
from gpudev.cluster.names import Names, Placement, collaborator_account
from gpudev.cluster.pod_docker import add_docker
from gpudev.cluster.pod_entrypoint import run_own_entrypoint
from gpudev.cluster.pod_environment import RENDEZVOUS_PORT, pod_resources_and_environment
from gpudev.cluster.pod_tools import bring_tools
from gpudev.cluster.vocabulary import (
    GPU_RESOURCE,
    GPU_TYPE_LABEL,
    PROFILING_LABEL,
    RANK_LABEL,
    RESERVATION_LABEL,
    USER_LABEL,
    label_value,
)
from gpudev.cluster.workspace import workspace_gib
from gpudev.models import GpuType, Reservation

# Jupyter listens on a Unix socket only dev can open (startup.sh): the owner reaches it through
# SSH (`gpu-dev connect --jupyter` forwards a local port), never through a Service. This is
# the local port its URL names.
JUPYTER_PORT = 8888
# Capabilities: the runtime's default set minus NET_RAW (raw sockets: spoofing, ARP tricks
# on the node's network), plus SYS_ADMIN for profiling only (perf counters, Nsight).
DROPPED_CAPABILITIES = ["NET_RAW"]
PROFILING_CAPABILITIES = ["SYS_ADMIN"]
# What a profiling pod on a dedicated node tolerates: the operator's taint of that node
# (`gpu-dev.pytorch.org/profiling=true:NoSchedule`), whatever its effect.
PROFILING_TOLERATION = {"key": PROFILING_LABEL, "operator": "Equal", "value": "true"}
STARTUP_SCRIPT = Path(__file__).with_name("startup.sh")
JUPYTER_CHECK_SCRIPT = Path(__file__).with_name("jupyter_check.sh")
JUPYTER_CHECK = "jupyter-check"  # node 0's init container: can the image serve Jupyter?
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


@cache
def jupyter_check_script() -> str:
    return JUPYTER_CHECK_SCRIPT.read_text()


def jupyter_check(image: str, env: dict[str, str]) -> dict[str, Any]:
    """Node 0's init container: the pod's own image (no extra pull) and the dev container's
    environment (its PATH) say whether `jupyter-lab` is there, in the termination message
    (`jupyter=available` / `jupyter=unavailable: ...`, read by cluster/jupyter_verdict.py).
    It runs before the dev container starts, so the pod is Ready only once it said."""
    return {
        "name": JUPYTER_CHECK,
        "image": image,
        "command": ["/bin/bash", "-c", jupyter_check_script()],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "250m", "memory": "128Mi"},
        },
        "securityContext": {
            **container_security(profiling=False),  # never SYS_ADMIN: it only looks
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


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


def manifest(
    kind: str,
    reservation: Reservation,
    name: str,
    *,
    api_version: str = "v1",
    extra_labels: dict[str, str] | None = None,
    **body: Any,
) -> dict[str, Any]:
    """One of the reservation's objects: `kind`, its metadata (labelled so that tear down
    finds it) and the rest of its body (`spec`, `data`, ...)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata(reservation, name, **(extra_labels or {})),
        **body,
    }


def control_config_map(
    reservation: Reservation,
    expires_at: str,
    warning_level: int | None,
    warning_text: str,
    health_warning: str = "",
) -> dict[str, Any]:
    """What the pod's control loop applies: the banner's expiry and warnings (the expiry
    warning of the schedule and the availability updater's pod-health warning) and Jupyter."""
    return manifest(
        "ConfigMap",
        reservation,
        Names.of(reservation).control,
        data={
            "expires_at": expires_at,
            "warning_level": "" if warning_level is None else str(warning_level),
            "warning_text": warning_text,
            "health_warning": health_warning,
            "jupyter": "true" if reservation.jupyter_enabled else "false",
        },
    )


OWNER_KEYS_ENTRY = "authorized_keys"


def added_user_entry(login: str) -> str:
    """The keys Secret's entry of an added GitHub user."""
    return f"user.{collaborator_account(login)}"


def keys_secret(
    reservation: Reservation,
    authorized_keys: str,
    added_users: dict[str, str],
    host_key: dict[str, str],
) -> dict[str, Any]:
    """SSH keys, sshd's host key and the Jupyter token. The owner's keys open the `dev`
    account; each added GitHub user gets an account of their own (`user.<account>`, see
    collaborator_account), so nobody shares a session, a home or an agent. `host_key`: the
    entries of the reservation's host key (host_keys.HostKey.entries), made once at provision
    and carried over at every refresh; empty for a Secret made before host keys were kept."""
    return manifest(
        "Secret",
        reservation,
        Names.of(reservation).keys,
        type="Opaque",
        stringData={
            OWNER_KEYS_ENTRY: authorized_keys,
            "jupyter_token": reservation.jupyter_token or "",
            **{added_user_entry(login): keys for login, keys in added_users.items()},
            **host_key,
        },
    )


def nodes_config_map(
    reservation: Reservation, gpus_per_node: int, host_public_key: str
) -> dict[str, Any]:
    """A multinode reservation's hostfile, ssh config and launcher (cluster/node_access.py)."""
    return manifest(
        "ConfigMap",
        reservation,
        node_access.nodes_name(reservation),
        data=node_access.nodes_data(reservation, gpus_per_node, host_public_key),
    )


def nodes_secret(reservation: Reservation, key: HostKey) -> dict[str, Any]:
    """A multinode reservation's own key pair, for dev between its pods (node_access.py)."""
    return manifest(
        "Secret",
        reservation,
        node_access.nodes_name(reservation),
        type="Opaque",
        stringData=node_access.key_entries(key),
    )


def keyless_users(secret: dict[str, Any], users: list[str]) -> list[str]:
    """The added users whose entry in the keys Secret holds no key: GitHub listed none for
    them, so they cannot log in until they add one (`show` says so)."""
    entries = secret["stringData"]
    return [u for u in users if not entries.get(added_user_entry(u), "").strip()]


def container_security(profiling: bool) -> dict[str, Any]:
    """The runtime's default capabilities minus NET_RAW, plus SYS_ADMIN for profiling.
    Privilege escalation stays allowed: the dev user has passwordless sudo (a setuid
    binary, inert under no-new-privs) and is root of its own container; the container is
    the boundary (seccomp, the bounding set, no service-account token, the network policy;
    docs/decisions.md 2026-11-24 "sudo in every pod")."""
    add = {"add": PROFILING_CAPABILITIES} if profiling else {}
    return {"capabilities": {**add, "drop": DROPPED_CAPABILITIES}}


def pod(
    reservation: Reservation,
    gpu_type: GpuType,
    placement: Placement,
    image: str,
    home_claim: str | None = None,
    tools_image: str = "",
    docker_image: str = "",
) -> dict[str, Any]:
    """`home_claim`: the claim on the named disk, mounted at /home/dev by pod 0 only;
    `tools_image`: the deployment's tools (pod_tools.py), none when empty; `docker_image`:
    the Docker sidecar's, for a reservation made with `--docker` (pod_docker.py)."""
    names = Names.of(reservation)
    persistent = home_claim is not None and placement.rank == 0
    resources, env = pod_resources_and_environment(reservation, gpu_type, placement, persistent)
    # multinode: EFA, and the nodes' key, hostfile and launcher (docs/multinode.md)
    resources, env = with_efa(resources, env, efa_interfaces(reservation, gpu_type))
    node_volumes, node_mounts = node_access.pod_volumes(reservation)
    gpus = int(resources.get("limits", {}).get(GPU_RESOURCE, 0))
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
                    *node_mounts,
                ],
            }
        ],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
            {"name": "workspace", "emptyDir": {"sizeLimit": f"{workspace_gib(gpus)}Gi"}},
            {"name": "dev-home", "persistentVolumeClaim": {"claimName": home_claim}}
            if persistent
            else {"name": "dev-home", "emptyDir": {}},
            {"name": "control", "configMap": {"name": names.control}},
            {"name": "keys", "secret": {"secretName": names.keys, "defaultMode": 0o400}},
            *node_volumes,
        ],
    }
    if placement.rank == 0:  # Jupyter runs on node 0 only (its Service selects rank 0)
        spec["initContainers"] = [jupyter_check(image, env)]
    if persistent:  # the disk's listing, written as it stops (cluster/home_listing.py)
        spec["containers"][0] |= listing_hook()
    if reservation.preserve_entrypoint:  # the image's own entrypoint: no SSH, no tools
        run_own_entrypoint(spec)
    elif tools_image:  # sshd, sudo and a shell from the pod itself: any Linux image
        bring_tools(spec, tools_image)
    if reservation.docker:  # a Docker daemon beside the dev container
        add_docker(spec, docker_image)
    if not gpu_type.is_cpu_only:
        spec["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    if reservation.profiling and placement.profiling_node:
        # A node dedicated to profiling (the allocator put it there): select its label, so
        # the kubelet refuses the pod anywhere else, and tolerate its taint.
        spec["nodeSelector"][PROFILING_LABEL] = "true"
        spec["tolerations"] = [*spec.get("tolerations", []), PROFILING_TOLERATION]
    pod_manifest = manifest(
        "Pod",
        reservation,
        names.pod(placement.rank),
        extra_labels={RANK_LABEL: str(placement.rank)},
        spec=spec,
    )
    if persistent:
        pod_manifest["metadata"]["finalizers"] = [LISTING_FINALIZER]
    return pod_manifest
