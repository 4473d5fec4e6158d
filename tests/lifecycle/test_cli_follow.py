"""`gpu-dev reserve` without --no-wait follows the reservation to active, prints how to
connect and writes the per-reservation SSH config; `gpu-dev cancel` ends it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gpudev_cli.main import cli
from tests.lifecycle.helpers import wait_for_status


def test_reserve_waits_until_active_then_connect_details_and_cancel(
    api, local_cloud, tmp_path, monkeypatch
):
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    options = ["--profile", "alice", "--region", "us-east-2"]
    options += ["--api-url", local_cloud.describe()["api_url"]]
    runner = CliRunner()

    result = runner.invoke(
        cli,
        [
            *options,
            "-o",
            "json",
            "reserve",
            "-t",
            "t4",
            "-g",
            "2",
            "-h",
            "0.5",
            "--no-interactive",
            "--github-user",
            "alice",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    reservation = json.loads(result.stdout)
    rid = reservation["reservation_id"]
    assert reservation["status"] == "active"
    assert reservation["ssh_command"].startswith("ssh -p ")
    config = tmp_path / "gpu-dev" / f"{rid[:8]}-sshconfig"
    assert config.stat().st_mode & 0o777 == 0o600
    assert f"Port {reservation['node_port']}" in config.read_text()

    shown = runner.invoke(cli, [*options, "show", rid[:8]], catch_exceptions=False)
    assert f"gpu-dev connect {rid[:8]}" in shown.stdout

    cancelled = runner.invoke(cli, [*options, "cancel", rid[:8]], catch_exceptions=False)
    assert cancelled.exit_code == 0 and not config.exists()
    wait_for_status(api, rid, "cancelled")
