"""Per-reservation SSH configs under ~/.gpu-dev (0600), with the reservation's pinned host
keys, the commands that use them, and `gpu-dev connect`'s ssh (its Jupyter tunnel:
jupyter_tunnel.py).

A reservation's config is written as soon as a command that follows or lists reservations
sees it active, and removed as soon as one sees it ended (`sync_configs`), so the directory
holds the live ones only and `Include`-ing it (ssh_include.py) never offers a dead host."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpudev_cli.client import CliError
from gpudev_cli.context import FINAL

CONFIG_SUFFIX = "-sshconfig"
KNOWN_HOSTS_SUFFIX = "-known_hosts"  # not matched by ssh_include's `*-sshconfig`
HOME_IN_POD = "/home/dev"
INTERNAL_HINT = (
    "this is the node's internal address (its node group has no public IP): connect from "
    "inside the cluster's VPC, through your VPN or a bastion"
)


def state_dir() -> Path:
    return Path(os.environ.get("GPU_DEV_HOME") or Path.home() / ".gpu-dev")


def host_alias(reservation: dict[str, Any], rank: int = 0) -> str:
    """Node 0's alias is the reservation's; node N of a multinode one is `...-nodeN`."""
    base = f"gpu-dev-{reservation['reservation_id'][:8]}"
    return base if rank == 0 else f"{base}-node{rank}"


def nodes(reservation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node's SSH endpoint, by rank: the API's `ssh_nodes`, or node 0's alone (a
    reservation made before every node had one)."""
    listed = sorted(reservation.get("ssh_nodes") or [], key=lambda n: n["rank"])
    if listed:
        return listed
    return [
        {
            "rank": 0,
            "node_ip": reservation.get("node_ip"),
            "node_port": reservation.get("node_port"),
            "node_address_kind": reservation.get("node_address_kind"),
        }
    ]


def ready_nodes(reservation: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in nodes(reservation) if n.get("node_ip") and n.get("node_port")]


def config_file(reservation: dict[str, Any]) -> Path:
    return state_dir() / f"{reservation['reservation_id'][:8]}{CONFIG_SUFFIX}"


def _quoted(path: Path) -> str:
    """A path as one ssh_config argument (ssh_config takes double-quoted arguments)."""
    text = str(path)
    if '"' in text:
        raise CliError(f"{text} contains a double quote, which ssh_config cannot express")
    return f'"{text}"'


def _has_endpoint(reservation: dict[str, Any]) -> bool:
    return bool(reservation.get("node_ip") and reservation.get("node_port"))


def known_hosts_file(reservation: dict[str, Any]) -> Path:
    return state_dir() / f"{reservation['reservation_id'][:8]}{KNOWN_HOSTS_SUFFIX}"


def _host_key_lines(reservation: dict[str, Any], directory: Path) -> list[str]:
    """How ssh checks the pod's host key. With the reservation's keys (made once by the
    control plane, kept across container restarts): pinned under the alias, in a
    known_hosts file of its own, strictly, so a NodePort reused by another reservation, or
    an address that changed, is never a prompt to accept a new key. Without (a reservation
    from before host keys were kept): the first key seen is accepted, as before."""
    keys = reservation.get("ssh_host_keys") or []
    if not keys:
        return [
            "    StrictHostKeyChecking accept-new\n",
            f"    UserKnownHostsFile {_quoted(directory / 'known_hosts')}\n",
        ]
    alias = host_alias(reservation)
    text = "".join(f"{alias} {key}\n" for key in keys)
    _write_private(known_hosts_file(reservation), text)
    return [
        f"    HostKeyAlias {alias}\n",
        "    StrictHostKeyChecking yes\n",
        f"    UserKnownHostsFile {_quoted(known_hosts_file(reservation))}\n",
    ]


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    path.chmod(0o600)  # an older file keeps its mode through O_CREAT


def write_config(reservation: dict[str, Any]) -> Path:
    """The SSH config for an active reservation (and the known_hosts file of its host
    keys), readable by its owner only."""
    if not _has_endpoint(reservation):
        raise CliError(
            f"reservation {reservation['reservation_id'][:8]} has no SSH endpoint yet "
            f"(it is {reservation['status']})"
        )
    directory = state_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = config_file(reservation)
    internal = reservation.get("node_address_kind") == "internal"
    # Every node's pod runs sshd with the reservation's one host key: all are pinned under
    # node 0's alias (HostKeyAlias), so one known_hosts line serves every node.
    host_keys = "".join(_host_key_lines(reservation, directory))
    text = (
        f"# gpu-dev reservation {reservation['reservation_id']}; removed when it ends\n"
        + (f"# {INTERNAL_HINT}\n" if internal else "")
        + "".join(
            f"Host {host_alias(reservation, node['rank'])}\n"
            f"    HostName {node['node_ip']}\n"
            f"    Port {node['node_port']}\n"
            "    User dev\n"
            "    ForwardAgent no\n"
            "    ServerAliveInterval 30\n" + host_keys
            for node in ready_nodes(reservation)
        )
    )
    _write_private(path, text)
    return path


def remove_config(reservation: dict[str, Any]) -> None:
    config_file(reservation).unlink(missing_ok=True)
    known_hosts_file(reservation).unlink(missing_ok=True)


def sync_configs(reservations: Iterable[dict[str, Any]]) -> None:
    """Configs for the reservations seen: written for active ones, removed for ended ones.
    (Reservations in a listing that are queued or preparing are left alone.)"""
    for reservation in reservations:
        if reservation["status"] == "active" and _has_endpoint(reservation):
            write_config(reservation)
        elif reservation["status"] in FINAL:
            remove_config(reservation)


def address_hint(reservation: dict[str, Any]) -> str | None:
    """What to know about the address before connecting, if anything."""
    return INTERNAL_HINT if reservation.get("node_address_kind") == "internal" else None


# Who can use an agent forwarded into a pod: anyone who is root there, and the owner (`dev`)
# has passwordless sudo in every pod (cluster/startup.sh).
AGENT_WARNING = (
    "a forwarded SSH agent can be used, while the session lasts, by anyone who is root in "
    "the pod: the reservation's owner has passwordless sudo there, so an agent forwarded by "
    "a collaborator (--add-user) is usable by the owner, and the owner's by anything "
    "running as root in the pod"
)


def _arguments(reservation: dict[str, Any], forward_agent: bool, rank: int = 0) -> list[str]:
    agent = ["-o", "ForwardAgent=yes"] if forward_agent else []
    return ["-F", str(config_file(reservation)), *agent, host_alias(reservation, rank)]


def printed_command(reservation: dict[str, Any], forward_agent: bool = False, rank: int = 0) -> str:
    """The ssh command line (to node `rank`), quoted for a POSIX shell: it works as printed
    once the reservation's config is written."""
    return shlex.join(["ssh", *_arguments(reservation, forward_agent, rank)])


def vscode_link(reservation: dict[str, Any]) -> str:
    """VS Code Remote-SSH opens this host by its alias (VS Code reads ~/.ssh/config, so the
    alias resolves once `gpu-dev config ssh-include` is on)."""
    return f"vscode://vscode-remote/ssh-remote+{host_alias(reservation)}{HOME_IN_POD}"


def ssh_command(
    reservation: dict[str, Any], forward_agent: bool = False, rank: int = 0
) -> list[str]:
    """ssh to node `rank` with the reservation's config. The agent is forwarded only when
    asked (AGENT_WARNING)."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise CliError("ssh is not installed or not on PATH")
    if rank not in {node["rank"] for node in ready_nodes(reservation)}:
        ranks = ", ".join(str(node["rank"]) for node in ready_nodes(reservation))
        raise CliError(
            f"reservation {reservation['reservation_id'][:8]} has no node {rank} "
            f"with an SSH endpoint (its nodes: {ranks or 'none yet'})"
        )
    write_config(reservation)
    return [ssh, *_arguments(reservation, forward_agent, rank)]
