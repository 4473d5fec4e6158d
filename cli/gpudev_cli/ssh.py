"""Per-reservation SSH configs under ~/.gpu-dev (0600) and `gpu-dev connect`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from gpudev_cli.client import CliError


def state_dir() -> Path:
    return Path(os.environ.get("GPU_DEV_HOME") or Path.home() / ".gpu-dev")


def host_alias(reservation: dict[str, Any]) -> str:
    return f"gpu-dev-{reservation['reservation_id'][:8]}"


def config_file(reservation: dict[str, Any]) -> Path:
    return state_dir() / f"{reservation['reservation_id'][:8]}-sshconfig"


def write_config(reservation: dict[str, Any]) -> Path:
    """The SSH config for an active reservation, readable by its owner only."""
    if not (reservation.get("node_ip") and reservation.get("node_port")):
        raise CliError(
            f"reservation {reservation['reservation_id'][:8]} has no SSH endpoint yet "
            f"(it is {reservation['status']})"
        )
    directory = state_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = config_file(reservation)
    text = (
        f"Host {host_alias(reservation)}\n"
        f"    HostName {reservation['node_ip']}\n"
        f"    Port {reservation['node_port']}\n"
        "    User dev\n"
        "    ForwardAgent no\n"
        "    ServerAliveInterval 30\n"
        "    StrictHostKeyChecking accept-new\n"
        f"    UserKnownHostsFile {directory / 'known_hosts'}\n"
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    path.chmod(0o600)  # an older file keeps its mode through O_CREAT
    return path


def remove_config(reservation: dict[str, Any]) -> None:
    config_file(reservation).unlink(missing_ok=True)


def ssh_command(reservation: dict[str, Any], forward_agent: bool = False) -> list[str]:
    """ssh with the reservation's config. The agent is forwarded only when asked: anyone
    with root in the pod could use a forwarded agent while the session lasts."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise CliError("ssh is not installed or not on PATH")
    agent = ["-o", "ForwardAgent=yes"] if forward_agent else []
    return [ssh, "-F", str(write_config(reservation)), *agent, host_alias(reservation)]
