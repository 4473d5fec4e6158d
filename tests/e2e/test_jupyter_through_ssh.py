"""Jupyter's token goes to its owner only, and only through SSH; the pod's host key goes to
the CLI, which pins it. Over HTTP with the real CLI: the owner's view carries the localhost
URL (token included) and the host key; the operators' listing and force-cancel never carry
the token; `gpu-dev show` writes the pinned known_hosts under the alias and `gpu-dev connect
--jupyter` runs ssh with a local forward and prints the localhost URL. (The lifecycle tier
drives the real path: tests/lifecycle/test_extend_queue_multinode.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gpudev.cluster.host_keys import new_host_key
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient

TOKEN = "s3cret-jupyter-token"
URL = f"http://localhost:8888/lab?token={TOKEN}"


def _active_with_jupyter(run: Any, local_cloud: LocalCloud, host_key: str) -> str:
    """A reservation of alice's, made active with Jupyter on as the lifecycle leaves it."""
    made = run("-o", "json", "reserve", "-t", "t4", "-h", "2", "--no-wait")
    assert made.exit_code == 0, made.output
    rid = str(json.loads(made.stdout)["reservation_id"])
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET status = 'active', launched_at = now(),"
            " expires_at = now() + interval '2 hours', node_ip = '54.1.2.3', node_port = 30022,"
            " jupyter_enabled = true, jupyter_available = true, jupyter_token = %s,"
            " jupyter_url = %s, ssh_host_keys = %s WHERE reservation_id = %s",
            (TOKEN, URL, [host_key], rid),
        )
    return rid


def test_operators_never_see_a_jupyter_token_and_the_owner_sees_it_with_the_host_key(
    run: Any, api: ApiClient, local_cloud: LocalCloud
):
    host_key = new_host_key().public
    rid = _active_with_jupyter(run, local_cloud, host_key)
    owners = api.call("GET", f"/v1/reservations/{rid}")
    assert owners.status == 200, owners.body
    assert owners.body["jupyter_url"] == URL
    assert owners.body["ssh_host_keys"] == [host_key]

    listing = api.call("GET", "/v1/admin/reservations", "carol")
    assert listing.status == 200, listing.body
    assert TOKEN not in json.dumps(listing.body)
    (seen,) = [r for r in listing.body["reservations"] if r["reservation_id"] == rid]
    assert (seen["jupyter_enabled"], seen["jupyter_url"]) == (True, None)
    assert seen["ssh_host_keys"] == [host_key]

    cancelled = api.call("POST", f"/v1/admin/reservations/{rid}/cancel", "carol", {"reason": "t"})
    assert cancelled.status == 202, cancelled.body
    assert TOKEN not in json.dumps(cancelled.body)


@pytest.fixture
def fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ssh` first on PATH that records its arguments (the tunnel, as if closed at once)."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "ssh-args"
    script = bin_dir / "ssh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


@pytest.mark.skipif(not Path("/usr/bin/ssh").exists(), reason="OpenSSH client not installed")
def test_the_cli_pins_the_host_key_and_opens_jupyter_through_ssh_only(
    run: Any, local_cloud: LocalCloud, tmp_path: Path, fake_ssh: Path
):
    host_key = new_host_key().public
    rid = _active_with_jupyter(run, local_cloud, host_key)
    alias = f"gpu-dev-{rid[:8]}"
    shown = run("show", rid)
    assert shown.exit_code == 0, shown.output
    assert f"gpu-dev connect {rid[:8]} --jupyter" in shown.stdout
    assert TOKEN not in shown.stdout and "54.1.2.3:8888" not in shown.stdout
    state = tmp_path / "gpu-dev"
    known_hosts = state / f"{rid[:8]}-known_hosts"
    assert known_hosts.read_text() == f"{alias} {host_key}\n"
    resolved = subprocess.run(
        ["/usr/bin/ssh", "-G", "-F", str(state / f"{rid[:8]}-sshconfig"), alias],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert f"hostkeyalias {alias}" in resolved
    assert "stricthostkeychecking true" in resolved
    assert f"userknownhostsfile {known_hosts}" in resolved

    tunnel = run("connect", rid[:8], "--jupyter")
    assert tunnel.exit_code == 0, tunnel.output
    args = fake_ssh.read_text().splitlines()
    port, target = args[args.index("-L") + 1].split(":", 1)
    assert target == "/run/gpu-dev/jupyter/jupyter.sock" and "-N" in args and args[-1] == alias
    assert f"http://localhost:{port}/lab?token={TOKEN}" in tunnel.stdout
