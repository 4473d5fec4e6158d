"""How a multinode reservation's nodes reach each other (docs/multinode.md): `dev` on any
pod runs `ssh node-1`, `mpirun --hostfile /etc/gpu-dev/hostfile`, or `gpu-dev-run CMD` (CMD
on every node, output prefixed by node).

Two objects of the reservation, made at provision and deleted with the rest at tear down
(they carry the reservation's label; cluster/vocabulary.py KINDS):

- the nodes' Secret: an Ed25519 key pair made for this reservation alone. Mounted for root
  only (0400); the pod's startup hook (node_setup.sh) gives the private half to `dev` alone
  and makes the public half open `dev` on every pod. No added user's account can read it,
  and it is never shown outside the pods.
- the nodes' ConfigMap: the hostfile (`node-<rank> slots=<gpus>`), an ssh config with the
  `node-0 … node-N` aliases (each pod's DNS name behind the headless Service), a
  known_hosts line for the reservation's host key (every pod of a reservation has the same
  one: cluster/host_keys.py), the launcher (gpu_dev_run.sh) and the hook itself.

The per-reservation NetworkPolicy already lets the reservation's pods reach each other on
every port and nobody else (cluster/network.py): nothing here widens it.
"""

from __future__ import annotations

import secrets
from functools import cache
from pathlib import Path
from typing import Any

from gpudev.cluster.host_keys import HostKey, host_key_of
from gpudev.cluster.names import Names
from gpudev.models import Reservation

NODE_SETUP_SCRIPT = Path(__file__).with_name("node_setup.sh")
LAUNCHER_SCRIPT = Path(__file__).with_name("gpu_dev_run.sh")
NODES_MOUNT = "/etc/gpu-dev/nodes"  # the ConfigMap (startup.sh sources its setup.sh)
NODE_KEY_MOUNT = "/etc/gpu-dev/node-key"  # the Secret, root only
PRIVATE_ENTRY = "id_ed25519"
PUBLIC_ENTRY = "id_ed25519.pub"
# Where the pods find the key the ssh config names (node_setup.sh installs it for dev).
INSTALLED_KEY = "/run/gpu-dev/nodes/id_ed25519"


def alias(rank: int) -> str:
    return f"node-{rank}"


def nodes_name(reservation: Reservation) -> str:
    """The ConfigMap's and the Secret's name (different kinds: one name)."""
    return f"{Names.of(reservation).base}-nodes"


def host_key_alias(reservation: Reservation) -> str:
    return f"{Names.of(reservation).base}-nodes"


def new_node_key() -> HostKey:
    return host_key_of(secrets.token_bytes(32), comment="gpu-dev-nodes")


def hostfile(reservation: Reservation, gpus_per_node: int) -> str:
    """One line per node, `node-<rank> slots=<gpus>` (Open MPI's and DeepSpeed's format),
    in rank order."""
    return "".join(
        f"{alias(rank)} slots={gpus_per_node}\n" for rank in range(reservation.total_nodes)
    )


def ssh_config(reservation: Reservation) -> str:
    """`node-<rank>` aliases for dev's ssh, first match wins: each alias's own block
    (its pod's DNS name), then what every alias shares."""
    names = Names.of(reservation)
    blocks = [
        f"Host {alias(rank)}\n    HostName {names.pod(rank)}.{names.headless_service}\n"
        for rank in range(reservation.total_nodes)
    ]
    blocks.append(
        "Host node-*\n"
        "    User dev\n"
        "    Port 22\n"
        f"    IdentityFile {INSTALLED_KEY}\n"
        "    IdentitiesOnly yes\n"
        "    BatchMode yes\n"
        f"    HostKeyAlias {host_key_alias(reservation)}\n"
        f"    UserKnownHostsFile {NODES_MOUNT}/known_hosts\n"
        "    StrictHostKeyChecking yes\n"
    )
    return "# gpu-dev: the reservation's nodes (cluster/node_access.py)\n" + "".join(blocks)


def known_hosts(reservation: Reservation, host_public_key: str) -> str:
    return f"{host_key_alias(reservation)} {host_public_key.strip()}\n"


@cache
def _script(path: Path) -> str:
    return path.read_text()


def nodes_data(
    reservation: Reservation, gpus_per_node: int, host_public_key: str
) -> dict[str, str]:
    """The nodes' ConfigMap's entries (objects.nodes_config_map)."""
    return {
        "hostfile": hostfile(reservation, gpus_per_node),
        "ssh_config": ssh_config(reservation),
        "known_hosts": known_hosts(reservation, host_public_key),
        "setup.sh": _script(NODE_SETUP_SCRIPT),
        "gpu-dev-run": _script(LAUNCHER_SCRIPT),
    }


def key_entries(key: HostKey) -> dict[str, str]:
    """The nodes' Secret's entries (objects.nodes_secret)."""
    return {PRIVATE_ENTRY: key.private, PUBLIC_ENTRY: key.public + "\n"}


def pod_volumes(reservation: Reservation) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The pod's volumes and the container's mounts of both objects; none for one node."""
    if reservation.total_nodes < 2:
        return [], []
    name = nodes_name(reservation)
    return [
        {"name": "nodes", "configMap": {"name": name}},
        {"name": "node-key", "secret": {"secretName": name, "defaultMode": 0o400}},
    ], [
        {"name": "nodes", "mountPath": NODES_MOUNT, "readOnly": True},
        {"name": "node-key", "mountPath": NODE_KEY_MOUNT, "readOnly": True},
    ]
