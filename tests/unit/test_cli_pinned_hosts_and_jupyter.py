"""The CLI pins a reservation's sshd host key (the one the control plane made for it, kept
across container restarts) under the alias gpu-dev-<id8>, strictly, so a NodePort reused by
another reservation is refused instead of offered as a new host; and `gpu-dev connect
--jupyter` opens Jupyter only through SSH, printing a localhost URL. The real OpenSSH reads
what is written (`ssh -G` resolves without connecting; `ssh-keygen -F` finds known hosts)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from gpudev_cli import context, jupyter_tunnel, render, ssh
from gpudev_cli.client import CliError
from gpudev_cli.context import console
from gpudev_cli.main import cli
from tests.unit import test_cli_ssh
from tests.unit.test_cli_ssh import EXTERNAL, SSH, resolved

pytestmark = pytest.mark.skipif(not Path(SSH).exists(), reason="OpenSSH client not installed")
homes = test_cli_ssh.homes  # GPU_DEV_HOME (with a space) and HOME in a temporary directory

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJZ0Ym1w3voEDayKIxrUxWgyY6VDIjG4XR87xKsgRtO4"
PINNED = {
    **EXTERNAL,
    "reservation_id": "5e4d3c2b-0000-4000-8000-000000000005",
    "ssh_host_keys": [HOST_KEY],
    "jupyter_enabled": True,
    "jupyter_available": True,
    "jupyter_url": "http://localhost:8888/lab?token=s3cret",
}


def _known_host(alias: str, known_hosts: Path) -> str:
    found = subprocess.run(
        ["ssh-keygen", "-F", alias, "-f", str(known_hosts)],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout


def test_the_reservations_host_key_is_pinned_under_its_alias_strictly():
    ssh.sync_configs([PINNED])
    options = resolved("-F", str(ssh.config_file(PINNED)), "gpu-dev-5e4d3c2b")
    assert options["hostname"] == "54.12.34.56" and options["port"] == "30022"
    assert options["hostkeyalias"] == "gpu-dev-5e4d3c2b"
    assert options["stricthostkeychecking"] == "true"
    known_hosts = ssh.known_hosts_file(PINNED)
    assert options["userknownhostsfile"] == str(known_hosts)
    assert known_hosts.read_text() == f"gpu-dev-5e4d3c2b {HOST_KEY}\n"
    assert known_hosts.stat().st_mode & 0o777 == 0o600
    assert HOST_KEY.split()[1] in _known_host("gpu-dev-5e4d3c2b", known_hosts)
    # the address is not what is checked: another reservation on this ip:port is not trusted
    assert _known_host("[54.12.34.56]:30022", known_hosts) == ""


def test_two_reservations_on_one_reused_port_each_pin_their_own_key():
    """An ended reservation's NodePort given to a new one: each alias has its own key, so
    neither looks like the other with a changed key (the old `accept-new` by ip:port did)."""
    other_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKkeyOfAnotherReservationXXXXXXXXXXXXXXXXXXX"
    later = {**PINNED, "reservation_id": "6f5e4d3c-0000-4000-8000-000000000006"}
    later["ssh_host_keys"] = [other_key]
    ssh.sync_configs([{**PINNED, "status": "expired"}, later])
    assert not ssh.config_file(PINNED).exists() and not ssh.known_hosts_file(PINNED).exists()
    options = resolved("-F", str(ssh.config_file(later)), "gpu-dev-6f5e4d3c")
    assert (options["hostname"], options["port"]) == ("54.12.34.56", "30022")
    assert ssh.known_hosts_file(later).read_text() == f"gpu-dev-6f5e4d3c {other_key}\n"


def test_a_reservation_without_host_keys_keeps_accepting_the_first_key_seen():
    """Provisioned before host keys were kept: nothing to pin yet."""
    ssh.sync_configs([EXTERNAL])
    options = resolved("-F", str(ssh.config_file(EXTERNAL)), "gpu-dev-0f1e2d3c")
    assert options["stricthostkeychecking"] == "accept-new"
    assert "hostkeyalias" not in options
    assert not ssh.known_hosts_file(EXTERNAL).exists()


def test_show_gives_the_jupyter_command_never_a_network_url():
    ssh.sync_configs([PINNED])
    row = {"gpu_type": "t4", "gpu_count": 1, "duration_hours": 1}
    with console.capture() as captured:
        render.reservation_panel({**row, **PINNED})
    text = " ".join(captured.get().split())
    assert "Jupyter: gpu-dev connect 5e4d3c2b --jupyter" in text
    assert "54.12.34.56:" not in text and "s3cret" not in text


def test_an_ended_reservation_offers_no_jupyter():
    row = {"gpu_type": "t4", "gpu_count": 1, "duration_hours": 1}
    with console.capture() as captured:
        render.reservation_panel({**row, **PINNED, "status": "expired"})
    assert "Jupyter" not in captured.get()


def test_the_tunnel_forwards_a_local_port_to_jupyters_socket_in_the_pod():
    command = jupyter_tunnel.tunnel_command(PINNED, 18888)
    assert command[0].endswith("ssh")
    options = resolved(*command[1:])
    assert options["localforward"] == "18888 /run/gpu-dev/jupyter/jupyter.sock"
    assert options["sessiontype"] == "none"  # -N: a tunnel, no shell
    assert options["exitonforwardfailure"] == "yes"
    assert options["hostkeyalias"] == "gpu-dev-5e4d3c2b"
    assert options["stricthostkeychecking"] == "true"
    assert jupyter_tunnel.local_url(PINNED, 18888) == "http://localhost:18888/lab?token=s3cret"


def test_a_busy_8888_gets_another_free_port():
    with socket.socket() as taken:
        # something on this machine may have it already: the same situation
        with contextlib.suppress(OSError):
            taken.bind(("127.0.0.1", 8888))
            taken.listen()
        port = jupyter_tunnel.free_local_port()
    assert port != 8888 and port > 0


@pytest.fixture
def fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ssh` first on PATH that records its arguments and exits with $FAKE_SSH_EXIT."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "ssh-args"
    script = bin_dir / "ssh"
    script.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}"\nexit "${{FAKE_SSH_EXIT:-0}}"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def _api_answers(reservation: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's client (the CLI's boundary) answers every GET with `reservation`."""

    class Client:
        def call(self, method: str, url: str, body: object = None) -> SimpleNamespace:
            assert (method, url) == ("GET", "/v1/reservations/5e4d3c2b")
            return SimpleNamespace(status=200, body=reservation)

    monkeypatch.setattr(context.Context, "client", lambda self: Client())


def _connect(reservation: dict[str, Any], monkeypatch: pytest.MonkeyPatch, *options: str) -> Any:
    """`gpu-dev connect 5e4d3c2b --jupyter`, the API answering with `reservation`."""
    _api_answers(reservation, monkeypatch)
    return CliRunner().invoke(cli, ["connect", "5e4d3c2b", "--jupyter", *options])


def test_connect_jupyter_prints_the_localhost_url_and_runs_the_tunnel(fake_ssh, monkeypatch):
    done = _connect(PINNED, monkeypatch)
    assert done.exit_code == 0, done.output
    args = fake_ssh.read_text().splitlines()
    local = args[args.index("-L") + 1]
    port, target = local.split(":", 1)
    assert (
        target == "/run/gpu-dev/jupyter/jupyter.sock"
        and "-N" in args
        and args[-1] == "gpu-dev-5e4d3c2b"
    )
    assert f"http://localhost:{port}/lab?token=s3cret" in done.stdout
    assert "54.12.34.56" not in done.stdout


def test_connect_jupyter_says_when_ssh_could_not_open_the_tunnel(fake_ssh, monkeypatch):
    monkeypatch.setenv("FAKE_SSH_EXIT", "255")
    done = _connect(PINNED, monkeypatch)
    assert done.exit_code == 1
    assert "could not open the tunnel to 5e4d3c2b's Jupyter" in done.output


@pytest.mark.parametrize(
    ("jupyter", "message"),
    [
        (
            {"jupyter_enabled": False, "jupyter_url": None},
            "Jupyter is off on 5e4d3c2b: turn it on with `gpu-dev edit 5e4d3c2b --enable-jupyter`",
        ),
        ({"jupyter_enabled": True, "jupyter_url": None}, "Jupyter is starting on 5e4d3c2b"),
        (
            {"jupyter_url": None, "jupyter_available": False, "jupyter_error": "no jupyter-lab"},
            "Jupyter is unavailable on 5e4d3c2b: no jupyter-lab",
        ),
        ({"status": "preparing"}, "reservation 5e4d3c2b is preparing, not active"),
    ],
)
def test_connect_jupyter_without_a_jupyter_to_reach_says_why_and_runs_nothing(
    fake_ssh, monkeypatch, jupyter: dict[str, Any], message: str
):
    done = _connect({**PINNED, **jupyter}, monkeypatch)
    assert done.exit_code == 1
    assert message in " ".join(done.output.split())
    assert not fake_ssh.exists(), "ssh was not started"


def test_the_agent_is_not_forwarded_into_a_tunnel(fake_ssh, monkeypatch):
    done = _connect(PINNED, monkeypatch, "--forward-agent")
    assert done.exit_code == 2 and "--forward-agent is for a shell" in done.output
    assert not fake_ssh.exists()


def test_a_missing_ssh_is_one_clear_error(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CliError, match="ssh is not installed"):
        jupyter_tunnel.tunnel_command(PINNED, 18888)
