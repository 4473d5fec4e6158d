"""`gpu-dev connect --jupyter`: Jupyter listens on a Unix socket only `dev` can open (the
startup script), so its owner reaches it through SSH, a free local port forwarded to it, and its
token never crosses the network in cleartext (docs/decisions.md 2026-11-27 "Jupyter
through SSH; host keys made once")."""

from __future__ import annotations

import shutil
import socket
import subprocess
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click

from gpudev_cli import ssh
from gpudev_cli.client import CliError
from gpudev_cli.context import short

# Jupyter listens on a Unix socket in a directory only `dev` may enter (the startup script):
# the owner's SSH connection forwards a local port to it, and sshd opens the socket as dev,
# so no collaborator can listen in Jupyter's place or reach it.
JUPYTER_IN_POD = "/run/gpu-dev/jupyter/jupyter.sock"
PREFERRED_LOCAL_PORT = 8888


def free_local_port() -> int:
    """8888 when it is free on this machine (the port in the API's `jupyter_url`), else one
    the system picks. Another program may take it before ssh does: ssh then fails at once
    (ExitOnForwardFailure) and says so."""
    for port in (PREFERRED_LOCAL_PORT, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            bound: int = probe.getsockname()[1]
            return bound
    raise CliError("no free local port for Jupyter")  # pragma: no cover - port 0 fails


def local_url(reservation: dict[str, Any], local_port: int) -> str:
    """The reservation's Jupyter URL (its token included) on the forwarded local port."""
    url = urlsplit(str(reservation["jupyter_url"]))
    return urlunsplit(url._replace(scheme="http", netloc=f"localhost:{local_port}"))


def tunnel_command(reservation: dict[str, Any], local_port: int) -> list[str]:
    """ssh forwarding `local_port` on this machine's loopback to Jupyter in the pod, and
    nothing else (-N: no shell), until interrupted."""
    program = shutil.which("ssh")
    if program is None:
        raise CliError("ssh is not installed or not on PATH")
    ssh.write_config(reservation)
    return [
        program,
        "-F",
        str(ssh.config_file(reservation)),
        "-N",
        "-o",
        "ExitOnForwardFailure=yes",
        "-L",
        f"{local_port}:{JUPYTER_IN_POD}",
        ssh.host_alias(reservation),
    ]


def open_tunnel(reservation: dict[str, Any]) -> None:
    """ssh -N -L <free local port>:<Jupyter's socket> until Ctrl+C, with the URL to open."""
    rid = short(reservation["reservation_id"])
    if not reservation.get("jupyter_url"):
        if reservation.get("jupyter_available") is False:
            raise CliError(f"Jupyter is unavailable on {rid}: {reservation.get('jupyter_error')}")
        raise CliError(
            f"Jupyter is starting on {rid}; try again in a few seconds"
            if reservation.get("jupyter_enabled")
            else f"Jupyter is off on {rid}: turn it on with `gpu-dev edit {rid} --enable-jupyter`"
        )
    port = free_local_port()
    command = tunnel_command(reservation, port)
    if hint := ssh.address_hint(reservation):
        click.echo(f"note: {reservation['node_ip']}: {hint}", err=True)
    click.echo(f"Jupyter through SSH on local port {port} (Ctrl+C closes the tunnel):", err=True)
    click.echo(local_url(reservation, port))
    # Ctrl+C reaches ssh too (the terminal signals the whole foreground group) and ends it;
    # it must not be ignored here, since ssh -N keeps an inherited "ignore SIGINT".
    process = subprocess.Popen(command)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        click.echo("Jupyter tunnel closed.", err=True)
        return
    if code == 255:
        raise CliError(
            f"ssh could not open the tunnel to {rid}'s Jupyter (local port {port}); "
            f"check `gpu-dev show {rid}` and your SSH keys"
        )
    click.echo("Jupyter tunnel closed.", err=True)
