"""The Kubernetes objects of a reservation, as plain manifests (reference §7, minus exec).

Everything carries the label gpu-dev/reservation=<id>, which is how tear down finds it. The
pod is controlled declaratively: a ConfigMap (expiry, warning, Jupyter) and a Secret (SSH
keys, Jupyter token) are mounted into it and a small script in the pod applies them; nobody
needs pods/exec.

Isolation (docs/architecture.md "Security model"): the pod runs under the RuntimeDefault
seccomp profile with no service-account token and without privilege escalation; only a
profiling reservation gets CAP_SYS_ADMIN, and it lives in its own namespace because Pod
Security `baseline` (enforced on gpu-dev) refuses that capability. A per-reservation
NetworkPolicy lets the reservation's own pods reach each other and nobody else's.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gpudev.models import GpuType, Reservation

RESERVATION_LABEL = "gpu-dev/reservation"
USER_LABEL = "gpu-dev/user"  # a label (sanitised) and an annotation (the username as is)
RANK_LABEL = "gpu-dev/rank"
GPU = "nvidia.com/gpu"
RENDEZVOUS_PORT = 29500
JUPYTER_PORT = 8888
# What tear down deletes by label (and what the lifecycle tests check is gone): resources
# as the API server names them; networkpolicies are networking.k8s.io/v1, the rest core/v1.
KINDS = ("pods", "services", "configmaps", "secrets", "networkpolicies")
# Capabilities: the runtime's default set minus NET_RAW (raw sockets: spoofing, ARP tricks
# on the node's network), plus SYS_ADMIN for profiling only (perf counters, Nsight).
DROPPED_CAPABILITIES = ["NET_RAW"]
PROFILING_CAPABILITIES = ["SYS_ADMIN"]


@dataclass(frozen=True)
class Placement:
    rank: int
    node_name: str
    node_ip: str | None
    slots: int


@dataclass(frozen=True)
class Names:
    base: str
    total_nodes: int

    @classmethod
    def of(cls, reservation: Reservation) -> Names:
        return cls(f"gpu-dev-{str(reservation.reservation_id)[:8]}", reservation.total_nodes)

    def pod(self, rank: int) -> str:
        return self.base if self.total_nodes == 1 else f"{self.base}-{rank}"

    @property
    def ssh_service(self) -> str:
        return f"{self.base}-ssh"

    @property
    def headless_service(self) -> str:
        return f"{self.base}-headless"

    @property
    def jupyter_service(self) -> str:
        return f"{self.base}-jupyter"

    @property
    def control(self) -> str:
        return f"{self.base}-control"

    @property
    def keys(self) -> str:
        return f"{self.base}-keys"

    @property
    def network_policy(self) -> str:
        return f"{self.base}-peers"


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NOT_IN_LABEL_VALUE = re.compile(r"[^-A-Za-z0-9_.]+")


def label_value(raw: str) -> str:
    """`raw` as a valid Kubernetes label value (at most 63 of [-A-Za-z0-9_.], alphanumeric
    at both ends). A valid value is kept as it is; any other (an SSO session name such as
    `carol@example.com`) becomes a readable form plus a hash of the original, so two
    different users never share a value. The original goes into an annotation."""
    if _LABEL_VALUE.match(raw) and len(raw) <= 63:
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
    readable = _NOT_IN_LABEL_VALUE.sub("_", raw)[:52].strip("-_.")
    return f"{readable}-{digest}" if readable else digest


def labels(reservation: Reservation, **extra: str) -> dict[str, str]:
    return {
        "app": "gpu-dev-pod",
        RESERVATION_LABEL: str(reservation.reservation_id),
        USER_LABEL: label_value(reservation.user_id),
        **extra,
    }


def _metadata(reservation: Reservation, name: str, **extra: str) -> dict[str, Any]:
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
        "metadata": _metadata(reservation, Names.of(reservation).control),
        "data": {
            "expires_at": expires_at,
            "warning_level": "" if warning_level is None else str(warning_level),
            "warning_text": warning_text,
            "jupyter": "true" if reservation.jupyter_enabled else "false",
        },
    }


def collaborator_account(login: str) -> str:
    """The Unix account of an added GitHub user: `gh-` + the login in lower case (GitHub
    logins are case-insensitive), at most 32 characters (useradd's limit: a longer login
    keeps 20 characters and a hash). The prefix keeps it clear of `dev`, `root`, the image's
    system accounts and numeric names, which `id` and `getent` would read as UIDs."""
    name = login.lower()
    if len(name) > 29:
        name = f"{name[:20]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return f"gh-{name}"


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
        "metadata": _metadata(reservation, Names.of(reservation).keys),
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
        "metadata": _metadata(reservation, names.ssh_service),
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
        "metadata": _metadata(reservation, names.jupyter_service, **{"gpu-dev/jupyter": "true"}),
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
        "metadata": _metadata(reservation, Names.of(reservation).headless_service),
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
        "metadata": _metadata(reservation, Names.of(reservation).network_policy),
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
            GPU: str(gpus),
            "cpu": str(max(1, int(gpu_type.cpus * ratio * 0.9))),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio * 0.9))}Gi",
        },
        "limits": {
            GPU: str(gpus),
            "cpu": str(threads),
            "memory": f"{max(1, int(gpu_type.memory_gb * ratio))}Gi",
        },
    }, threads


STARTUP = r"""set -u
id dev >/dev/null 2>&1 || useradd -m -u 1081 -s /bin/bash dev 2>/dev/null || adduser -D -u 1081 dev
mkdir -p /workspace/.cache/huggingface && chown -R dev /workspace /home/dev
install -d -m 755 /etc/ssh/authorized_keys /run/gpu-dev  # root's: no user can redirect writes
if [ "${GPU_DEV_PROFILING:-false}" = true ]; then  # CAP_SYS_ADMIN is root's: dev may sudo
  command -v sudo >/dev/null || (apt-get update -qq && apt-get install -y -qq sudo)
  mkdir -p /etc/sudoers.d && echo 'dev ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/dev
  chmod 440 /etc/sudoers.d/dev
fi
cat > /usr/local/bin/gpu-dev-control <<'CONTROL'
#!/bin/bash
# Applies the reservation's mounted ConfigMap and Secret: SSH keys, warnings, Jupyter.
# Keys live in /etc/ssh/authorized_keys/<account> (sshd's AuthorizedKeysFile), a directory
# only root writes: nothing a user does in a home directory can redirect these writes.
install_keys() {  # account, keys file
  install -m 644 -o root -g root "$2" "/etc/ssh/authorized_keys/$1.new" \
    && mv -f "/etc/ssh/authorized_keys/$1.new" "/etc/ssh/authorized_keys/$1"
}
last_keys="" last_warning=""
while true; do
  keys=$(cat /etc/gpu-dev/keys/authorized_keys /etc/gpu-dev/keys/user.* 2>/dev/null)
  if [ "$keys" != "$last_keys" ]; then
    install_keys dev /etc/gpu-dev/keys/authorized_keys
    for file in /etc/gpu-dev/keys/user.*; do
      [ -e "$file" ] || continue
      account=${file##*/user.}  # gh-<login>, made by the lifecycle (collaborator_account)
      [[ $account =~ ^gh-[a-z0-9-]{1,29}$ ]] || continue
      id -- "$account" >/dev/null 2>&1 || useradd -m -s /bin/bash -- "$account" 2>/dev/null \
        || adduser -D "$account"
      install_keys "$account" "$file"
    done
    for file in /etc/ssh/authorized_keys/*; do  # a user removed from the reservation
      account=${file##*/}
      [ "$account" = dev ] || [ -e "/etc/gpu-dev/keys/user.$account" ] || rm -f -- "$file"
    done
    last_keys=$keys
  fi
  warning=$(cat /etc/gpu-dev/control/warning_text 2>/dev/null)
  if [ "$warning" != "$last_warning" ]; then
    printf '%s\n' "$warning" > /etc/gpu-dev-warning
    [ -n "$warning" ] && wall "$warning" 2>/dev/null
    last_warning=$warning
  fi
  if [ "$(cat /etc/gpu-dev/control/jupyter 2>/dev/null)" = "true" ]; then
    # The token reaches Jupyter in dev's environment (readable by dev only), never on a
    # command line (readable by every user in the pod); its log is dev's, mode 600.
    install -m 400 -o dev /etc/gpu-dev/keys/jupyter_token /run/gpu-dev/jupyter_token
    pgrep -f jupyter-lab >/dev/null || su - dev -c 'umask 077; \
      JUPYTER_TOKEN=$(cat /run/gpu-dev/jupyter_token) nohup jupyter-lab --ip=0.0.0.0 \
      --port=8888 --no-browser --ServerApp.root_dir=/workspace >~/.jupyter.log 2>&1 &'
  else
    pkill -f jupyter-lab 2>/dev/null
  fi
  sleep 5
done
CONTROL
chmod 755 /usr/local/bin/gpu-dev-control
echo '[ -s /etc/gpu-dev-warning ] && cat /etc/gpu-dev-warning' > /etc/profile.d/gpu-dev.sh
/usr/local/bin/gpu-dev-control &
command -v sshd >/dev/null || (apt-get update -qq && apt-get install -y -qq openssh-server)
mkdir -p /run/sshd && ssh-keygen -A
printf 'Port 22\nPermitRootLogin no\nPasswordAuthentication no\nPubkeyAuthentication yes\n' \
  > /etc/ssh/sshd_config
printf 'AuthorizedKeysFile /etc/ssh/authorized_keys/%%u\nUsePAM no\nX11Forwarding yes\n' \
  >> /etc/ssh/sshd_config
echo "SSH daemon starting on port 22"
exec /usr/sbin/sshd -D -e
"""


def pod(
    reservation: Reservation,
    gpu_type: GpuType,
    placement: Placement,
    image: str,
) -> dict[str, Any]:
    names = Names.of(reservation)
    per_node = 0 if gpu_type.is_cpu_only else reservation.gpu_count // reservation.total_nodes
    resources, threads = _resources(gpu_type, per_node)
    env = {
        "GPU_DEV_RESERVATION_ID": str(reservation.reservation_id),
        "GPU_DEV_USER_ID": reservation.user_id,
        "GPU_TYPE": gpu_type.gpu_type.upper(),
        "GPU_DEV_PROFILING": "true" if reservation.profiling else "false",
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
        "nodeSelector": {"GpuType": gpu_type.gpu_type},
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
                "command": ["/bin/bash", "-c", STARTUP],
                "ports": [
                    {"name": "ssh", "containerPort": 22},
                    {"name": "jupyter", "containerPort": JUPYTER_PORT},
                    {"name": "rendezvous", "containerPort": RENDEZVOUS_PORT},
                ],
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
            {"name": "dev-home", "emptyDir": {}},
            {"name": "control", "configMap": {"name": names.control}},
            {"name": "keys", "secret": {"secretName": names.keys, "defaultMode": 0o400}},
        ],
    }
    if not gpu_type.is_cpu_only:
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(
            reservation, names.pod(placement.rank), **{RANK_LABEL: str(placement.rank)}
        ),
        "spec": spec,
    }
