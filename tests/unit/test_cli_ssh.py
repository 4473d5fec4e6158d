"""Where to connect: the ssh command `show` and `connect` print works as printed (the real
OpenSSH parses it with `ssh -G`, which resolves the configuration without connecting), the
per-reservation configs follow the reservations' lives, and the opt-in `Include` in
~/.ssh/config is idempotent, undoable and never loses a byte of the user's file."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpudev_cli import render, ssh, ssh_include
from gpudev_cli.client import CliError
from gpudev_cli.context import console
from gpudev_cli.main import cli

SSH = "/usr/bin/ssh"
pytestmark = pytest.mark.skipif(not Path(SSH).exists(), reason="OpenSSH client not installed")

EXTERNAL = {
    "reservation_id": "0f1e2d3c-0000-4000-8000-000000000001",
    "status": "active",
    "node_ip": "54.12.34.56",
    "node_port": 30022,
    "node_address_kind": "external",
}
INTERNAL = {
    **EXTERNAL,
    "reservation_id": "9a8b7c6d-0000-4000-8000-000000000002",
    "node_ip": "10.0.7.9",
    "node_port": 31001,
    "node_address_kind": "internal",
}
USER_CONFIG = (
    "# mine\nHost *\n    User someone\n    IdentitiesOnly yes\n\nHost work\n    Port 2222\n"
)


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # A space in the state directory: the printed command must quote it, the config too.
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu dev"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def resolved(*arguments: str) -> dict[str, str]:
    """What OpenSSH would use, without connecting."""
    out = subprocess.run(
        [SSH, "-G", *arguments], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def run_printed(command: str) -> dict[str, str]:
    words = shlex.split(command)  # as a POSIX shell splits what the user pastes
    assert words[0] == "ssh"
    return resolved(*words[1:])


@pytest.mark.parametrize("reservation", [EXTERNAL, INTERNAL], ids=["external", "internal"])
def test_the_printed_command_resolves_to_the_reservation(reservation: dict[str, Any]):
    ssh.sync_configs([reservation])
    options = run_printed(ssh.printed_command(reservation))
    assert options["hostname"] == reservation["node_ip"]
    assert options["port"] == str(reservation["node_port"])
    assert options["user"] == "dev"
    assert options["forwardagent"] == "no"
    assert options["userknownhostsfile"] == str(ssh.state_dir() / "known_hosts")
    forwarded = run_printed(ssh.printed_command(reservation, forward_agent=True))
    assert forwarded["forwardagent"] == "yes"
    assert ssh.config_file(reservation).stat().st_mode & 0o777 == 0o600


def test_show_prints_the_command_the_link_and_the_internal_address_hint():
    ssh.sync_configs([EXTERNAL, INTERNAL])
    row = {"gpu_type": "t4", "gpu_count": 1, "duration_hours": 1, "jupyter_enabled": False}
    with console.capture() as captured:
        render.reservation_panel({**row, **INTERNAL})
    text = captured.get()
    line = next(x for x in text.splitlines() if x.startswith("SSH:"))
    assert run_printed(line.removeprefix("SSH:").strip())["hostname"] == "10.0.7.9"
    assert "vscode://vscode-remote/ssh-remote+gpu-dev-9a8b7c6d/home/dev" in text
    assert "internal address" in text and "VPN or a bastion" in text
    with console.capture() as captured:
        render.reservation_panel({**row, **EXTERNAL})
    assert "internal address" not in captured.get()


def test_configs_follow_the_reservations_lives():
    queued = {**EXTERNAL, "reservation_id": "11111111-0000-4000-8000-000000000003"}
    queued.update(status="queued", node_ip=None, node_port=None)
    ssh.sync_configs([EXTERNAL, INTERNAL, queued])
    assert ssh.config_file(EXTERNAL).exists() and ssh.config_file(INTERNAL).exists()
    assert not ssh.config_file(queued).exists()
    ssh.sync_configs([{**EXTERNAL, "status": "expired"}, {**INTERNAL, "status": "preparing"}])
    assert not ssh.config_file(EXTERNAL).exists(), "an ended reservation's config is pruned"
    assert ssh.config_file(INTERNAL).exists(), "a live one's is kept"


def test_the_include_reaches_live_reservations_and_leaves_the_users_hosts_alone(homes: Path):
    config = homes / "home" / ".ssh" / "config"
    config.parent.mkdir(parents=True)
    config.write_text(USER_CONFIG)
    config.chmod(0o644)
    ssh.sync_configs([EXTERNAL])
    assert ssh_include.install() is True
    assert ssh_include.install() is False, "a second run changes nothing"
    text = config.read_text()
    assert text.startswith(ssh_include.BEGIN) and text.endswith(USER_CONFIG)
    assert text.count("Include") == 1 and config.stat().st_mode & 0o777 == 0o644
    through_include = resolved("-F", str(config), "gpu-dev-0f1e2d3c")
    assert through_include["hostname"] == "54.12.34.56" and through_include["port"] == "30022"
    assert resolved("-F", str(config), "work")["port"] == "2222"
    assert ssh_include.remove() is True and config.read_text() == USER_CONFIG
    assert ssh_include.remove() is False and config.read_text() == USER_CONFIG


def test_a_symlinked_config_is_edited_where_it_points(homes: Path):
    target = homes / "dotfiles" / "ssh_config"
    target.parent.mkdir()
    target.write_text(USER_CONFIG)
    link = homes / "home" / ".ssh" / "config"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    ssh_include.install()
    assert link.is_symlink() and target.read_text().endswith(USER_CONFIG)
    assert ssh_include.installed()
    ssh_include.remove()
    assert link.is_symlink() and target.read_text() == USER_CONFIG


def test_no_config_yet_gets_a_private_one(homes: Path):
    assert ssh_include.install() is True
    config = homes / "home" / ".ssh" / "config"
    assert config.stat().st_mode & 0o777 == 0o600
    assert ssh_include.remove() is True and config.read_text() == ""


def test_a_broken_block_is_refused_and_the_file_left_as_it_was(homes: Path):
    config = homes / "home" / ".ssh" / "config"
    config.parent.mkdir(parents=True)
    broken = ssh_include.BEGIN + 'Include "/x/*"\n' + USER_CONFIG
    config.write_text(broken)
    for change in (ssh_include.install, ssh_include.remove):
        with pytest.raises(CliError, match="without its end marker"):
            change()
        assert config.read_text() == broken
    assert list(config.parent.iterdir()) == [config], "no temporary file left behind"
    assert not ssh_include.installed(), "show still works, without the `ssh <alias>` hint"


def test_the_command_says_what_it_did(homes: Path):
    runner = CliRunner()
    first = runner.invoke(cli, ["config", "ssh-include"])
    assert first.exit_code == 0 and "Added the gpu-dev Include" in first.output
    again = runner.invoke(cli, ["-o", "json", "config", "ssh-include"])
    assert '"changed": false' in again.output
    removed = runner.invoke(cli, ["config", "ssh-include", "--remove"])
    assert removed.exit_code == 0 and "Removed" in removed.output
