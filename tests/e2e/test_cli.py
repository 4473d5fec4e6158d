"""The real `gpu-dev` CLI against the local cloud, signed with the local IAM users' keys
through the standard credential chain (a shared credentials file and --profile)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpudev_cli.main import cli
from localcloud.stack import LocalCloud


@pytest.fixture
def run(
    local_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[object]:
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # The in-process functions keep their own env credentials; an explicit --profile wins.
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    api_url = local_cloud.describe()["api_url"]

    def invoke(*args: str, profile: str = "alice", api: bool = True) -> Result:
        options = ["--profile", profile, "--region", "us-east-2"]
        if api:
            options += ["--api-url", api_url]
        return CliRunner().invoke(cli, [*options, *args], catch_exceptions=False)

    yield invoke


def test_reserve_no_wait_then_list_show_and_cancel_in_json(run):
    reserved = run("--output", "json", "reserve", "-t", "h100", "-g", "4", "-h", "2", "--no-wait")
    assert reserved.exit_code == 0, reserved.output
    reservation = json.loads(reserved.stdout)
    rid = reservation["reservation_id"]
    assert (reservation["status"], reservation["gpu_count"]) == ("pending", 4)

    listed = json.loads(run("--output", "json", "list").stdout)
    assert rid in [r["reservation_id"] for r in listed]
    shown = json.loads(run("--output", "json", "show", rid[:8]).stdout)
    assert shown["reservation_id"] == rid
    cancelled = json.loads(run("--output", "json", "cancel", rid[:8]).stdout)
    assert cancelled["cancel_requested_at"] is not None

    bobs = json.loads(run("--output", "json", "list", profile="bob").stdout)
    assert rid not in [r["reservation_id"] for r in bobs]
    assert run("show", rid, profile="bob").exit_code == 1


def test_table_output_is_readable(run):
    run("reserve", "-t", "t4", "-g", "2", "-h", "0.5", "--name", "tabular", "--no-wait")
    listed = run("list")
    assert listed.exit_code == 0
    assert "GPU Reservations" in listed.output and "2x t4" in listed.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("reserve", "-t", "foo", "--no-wait"), "unknown GPU type 'foo'"),
        (("reserve", "-t", "t4", "-g", "8", "--no-wait"), "t4 accepts 1, 2, 4 GPUs"),
        (("reserve", "-t", "h100", "-h", "30", "--no-wait"), "hours must be between"),
        (("show", "abc"), "at least 8 characters"),
        (("cancel", "ffffffff"), "no reservation 'ffffffff'"),
    ],
)
def test_errors_are_one_line_and_exit_non_zero(run, args, message):
    result = run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_unknown_profile_missing_url_and_unreachable_api_get_their_own_hints(run, monkeypatch):
    assert "aws configure list-profiles" in run("list", profile="nobody").output
    no_url = run("list", api=False)
    assert no_url.exit_code == 1 and "gpu-dev config set api_url" in no_url.output
    monkeypatch.setenv("GPU_DEV_API_URL", "http://127.0.0.1:9")
    unreachable = run("list", api=False)
    assert unreachable.exit_code == 1 and "cannot reach the gpu-dev API" in unreachable.output


def test_bad_flags_exit_non_zero(run):
    result = run("reserve", "-t", "h100", "-g", "four")
    assert result.exit_code == 2 and "Invalid value" in result.output


def test_config_set_and_show(run, local_cloud):
    api_url = local_cloud.describe()["api_url"]
    assert run("config", "set", "api_url", api_url).exit_code == 0
    shown = json.loads(run("--output", "json", "config", "show", api=False).stdout)
    assert shown["api_url"] == api_url and shown["api_url_source"].endswith("config.json")
    assert run("list", api=False).exit_code == 0
    bad = run("config", "set", "api_url", "ftp://x")
    assert bad.exit_code == 1 and "must start with http" in bad.output


def test_avail_and_status(run, local_cloud):
    event = json.loads(
        (
            Path(__file__).resolve().parents[2]
            / "events"
            / "availability_updater"
            / "scheduled.json"
        ).read_text()
    )
    local_cloud.lambdas.invoke("AvailabilityUpdater", event)
    table = run("avail")
    assert table.exit_code == 0 and "h100" in table.stdout and "GPU availability" in table.stdout
    types = json.loads(run("--output", "json", "avail").stdout)
    assert {t["gpu_type"]: t["total_cluster_gpus"] for t in types}["h100"] == 16
    status = json.loads(run("--output", "json", "status").stdout)
    assert status["total_gpus"] >= 24
