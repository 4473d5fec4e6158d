"""The real `gpu-dev` CLI against the local cloud (the `run` fixture is in conftest.py), signed
with the local users' keys through the standard credential chain (a shared credentials file
and --profile)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import Result

from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations, drain_jobs


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
        (("reserve", "-t", "h100", "-h", "30", "--no-wait"), "hours must be at most 24 hours"),
        (("show", "abc"), "ids have at least 8 characters"),
        (("cancel", "ffffffff"), "no reservation with the id or name 'ffffffff'"),
        (("extend", "ffffffff", "-h", "2"), "no reservation with the id or name 'ffffffff'"),
        (("edit", "abc", "--enable-jupyter"), "ids have at least 8 characters"),
        (("disk", "show", "nope"), "no disk named 'nope'"),
        (("disk", "create", "bad name"), "invalid disk name 'bad name'"),
        (("connect",), "you have no active reservation"),
        (
            ("reserve", "-t", "h100", "-h", "0", "--no-wait"),
            "hours must be at least 5 minutes (0.0833 h); got 0.0",
        ),
        (("reserve", "-t", "h100", "-h", "nan", "--no-wait"), "hours must be a finite number"),
        (("reserve", "-t", "h100", "-g", "-1", "--no-wait"), "the GPU count must be at least 0"),
        (
            ("reserve", "-t", "h100", "-g", "99999999999999999999", "--no-wait"),
            "the GPU count must be at most 64 GPUs; got 99999999999999999999",
        ),
        (
            ("reserve", "-t", "t4", "--name", "n" * 3000, "--no-wait"),
            "name must be at most 63 characters; got 'nnnn",
        ),
        (("disk", "create", ""), "the disk name must not be empty"),
        # alice is an IAM user: outside the local cloud's PROFILING_ROLES (carol's SSO role)
        (
            ("reserve", "-t", "t4", "--profiling", "--no-wait"),
            "may ask for it; you called as arn:aws:iam::123456789012:user/alice",
        ),
        # too short for an id, so it may be a name: the CLI looks for both
        (("show", "e85"), "no reservation with the id or name 'e85'"),
    ],
)
def test_errors_are_one_line_and_exit_non_zero(run, args, message):
    result = run(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr and "None" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and len(result.stderr) < 400


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


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_interactive_reserve_asks_for_type_count_and_hours(run):
    # the last line answers the disk picker (default: none) when alice has disks
    result = run("reserve", "--interactive", "--no-wait", input="t4\n2\n1.5\n\n")
    assert result.exit_code == 0, result.output
    # the table and the questions on stderr: stdout holds only the result
    assert "GPU availability" in result.stderr and "GPU type" not in result.stdout
    assert "GPU type" in result.stderr and "GPUs" in result.stderr
    rid = result.stdout.split("Reservation ")[1][:8]
    shown = _json(run("--output", "json", "show", rid))
    assert (shown["gpu_type"], shown["gpu_count"], shown["duration_hours"]) == ("t4", 2, 1.5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("reserve", "--no-interactive", "--no-wait"), "--gpu-type is required"),
        (("reserve", "-t", "h100", "-g", "16", "--no-wait"), "add --distributed"),
        (("edit", "ffffffff"), "nothing to change"),
        (("disk", "delete", "x", "--no-interactive"), "needs --yes"),
    ],
)
def test_missing_values_without_a_terminal_are_usage_errors(run, local_cloud, args, message):
    before = count_reservations(local_cloud)
    result = run(*args)
    assert result.exit_code == 2 and message in result.output
    assert count_reservations(local_cloud) == before


def test_multinode_needs_distributed(run):
    reserved = _json(
        run("-o", "json", "reserve", "-t", "h100", "-g", "16", "--distributed", "--no-wait")
    )
    assert reserved["total_nodes"] == 2


WHEN_IT_APPLIES = (
    "this applies when it starts",
    "this applies once its pod is ready",
    "this applies to the running pod within 3 minutes",
)


def test_extend_and_edit(run):
    reserved = run("-o", "json", "reserve", "-t", "t4", "-h", "2", "--name", "edit-me", "--no-wait")
    rid = _json(reserved)["reservation_id"]
    # every command that takes a reservation takes its id, a prefix or its name
    assert _json(run("-o", "json", "extend", "edit-me", "-h", "3"))["duration_hours"] == 5
    edited = run("edit", "edit-me", "--add-user", "octocat", "--enable-jupyter", "--extend", "1")
    assert edited.exit_code == 0, edited.output
    said = " ".join(edited.stdout.split())
    assert "may now log in" not in said and "within seconds" not in said
    assert "octocat added: they log in with the public keys on their GitHub account" in said
    assert "Jupyter on: " in said and any(when in said for when in WHEN_IT_APPLIES), said
    assert f"Extended {rid[:8]} by 1 h (6 h in total)" in said
    shown = _json(run("-o", "json", "show", rid))
    assert (shown["duration_hours"], shown["secondary_users"], shown["jupyter_enabled"]) == (
        6,
        ["octocat"],
        True,
    )
    removed = run("edit", rid[:8], "--remove-user", "Octocat")
    assert removed.exit_code == 0, removed.output
    assert "Octocat removed: " in removed.stdout
    assert _json(run("-o", "json", "show", rid))["secondary_users"] == []
    absent = run("edit", rid[:8], "--remove-user", "octocat")
    assert absent.exit_code == 1
    assert f"'octocat' is not a user of reservation {rid[:8]} (added users: none)" in (
        absent.stderr
    )
    bad = run("edit", rid[:8], "--remove-user", "bad name")
    assert bad.exit_code == 1 and "invalid GitHub username 'bad name'" in bad.stderr
    assert run("extend", rid, "-h", "24").exit_code == 0  # 30 h, by the full id
    unknown = run("extend", "no-such-name", "-h", "1")
    assert unknown.exit_code == 1 and "no reservation with the id or name" in unknown.stderr
    refused = run("extend", rid[:8], "-h", "24")
    assert refused.exit_code == 1 and "at most 48 h in total" in refused.stderr


def test_disk_commands(run):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    assert _json(run("-o", "json", "disk", "create", name))["disk_name"] == name
    assert name in run("disk", "list").stdout
    assert _json(run("-o", "json", "disk", "show", name))["operation_status"] == "requested"
    assert _json(run("-o", "json", "disk", "rename", name, name + "-2"))["disk_name"] == name + "-2"
    deleted = run("disk", "delete", name + "-2", "--interactive", input="y\n")
    assert deleted.exit_code == 0 and "marked for deletion" in deleted.stdout
    again = run("disk", "delete", name + "-2", "-y")
    assert again.exit_code == 1 and "HTTP 410" in again.stderr
    restored = run("disk", "restore", name + "-2")
    assert restored.exit_code == 0 and f"Disk {name}-2 restored" in restored.stdout


def test_disk_list_show_and_content_say_the_state(run, local_cloud):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    run("disk", "create", name)
    listed = run("disk", "list").stdout
    assert name in listed and "Available" in listed and "1024 GB" in listed
    listed_json = _json(run("-o", "json", "disk", "list"))
    assert {"snapshot_count", "in_use", "last_used"} <= set(listed_json[0])
    content = run("disk", "list-content", name)
    assert content.exit_code == 0 and "no listing yet" in content.stdout
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE disks SET operation_status = 'failed', operation_error = 'EBS refused it',"
            " lifecycle_error = 'snapshot snap-1 failed', content_listing = 'f 9 train.py',"
            " content_listed_at = '2026-11-20 10:30+00', held_volume_id = 'vol-0abc'"
            " WHERE user_id = 'alice' AND disk_name = %s",
            (name,),
        )
    shown = run("disk", "show", name).stdout
    assert "last operation: failed: EBS refused it" in shown
    assert "not saved yet: snapshot snap-1 failed" in shown
    assert "volume: vol-0abc" in shown
    listing = run("disk", "list-content", name).stdout
    assert "f 9 train.py" in listing and "2026-11-20 10:30" in listing


def test_the_reserve_picker_lists_disks_and_offers_to_go_on_without_one_in_use(run, local_cloud):
    free, busy = f"cli-{uuid.uuid4().hex[:8]}", f"cli-{uuid.uuid4().hex[:8]}"
    run("disk", "create", free)
    run("disk", "create", busy)
    holder = _json(run("-o", "json", "reserve", "-t", "t4", "-h", "1", "--no-wait"))
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE disks SET reservation_id = %s WHERE user_id = 'alice' AND disk_name = %s",
            (holder["reservation_id"], busy),
        )
    args = ("-o", "json", "reserve", "-t", "t4", "-g", "1", "-h", "1", "--no-wait")
    picked = run(*args, "--interactive", input=f"{free}\n")
    assert picked.exit_code == 0, picked.output
    assert free in picked.stderr and "In use" in picked.stderr  # the table, with states
    assert json.loads(picked.stdout)["disk_name"] == free  # stdout: the JSON and nothing else

    without = run(*args, "--disk", busy, "--interactive", input="y\n")
    assert without.exit_code == 0, without.output
    assert f"in use by reservation {holder['reservation_id'][:8]}" in without.stderr
    assert json.loads(without.stdout)["disk_name"] is None
    declined = run(*args, "--disk", busy, "--interactive", input="n\n")
    assert declined.exit_code == 1


def _activate(cloud: LocalCloud, rid: str) -> None:
    with psycopg.connect(cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET status = 'active', launched_at = now(),"
            " expires_at = now() + interval '1 hour', node_ip = '10.0.0.7', node_port = 30123,"
            " ssh_command = 'ssh -p 30123 dev@10.0.0.7' WHERE reservation_id = %s",
            (rid,),
        )


def test_connect_runs_ssh_with_a_private_per_reservation_config(
    run, local_cloud, tmp_path, monkeypatch
):
    # ssh itself is the outer boundary: a stand-in records how it was called.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_ssh = bin_dir / "ssh"
    fake_ssh.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/ssh-args\nexit 0\n')
    fake_ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    for r in _json(run("-o", "json", "list", "--status", "active")):
        with psycopg.connect(local_cloud.database_url) as conn:
            conn.execute(
                "UPDATE reservations SET failure_reason = 'ended by a test',"
                " status = 'cancelled', reservation_ended = now()"
                " WHERE reservation_id = %s",
                (r["reservation_id"],),
            )
    rid = _json(run("-o", "json", "reserve", "-t", "t4", "--no-wait"))["reservation_id"]
    not_yet = run("connect", rid[:8])
    assert not_yet.exit_code == 1 and "is pending, not active" in not_yet.stderr
    config = tmp_path / "gpu-dev" / f"{rid[:8]}-sshconfig"
    _activate(local_cloud, rid)
    assert run("list").exit_code == 0 and config.exists(), "a listed active one gets its config"
    config.unlink()
    connected = run("connect")  # the only active one
    assert connected.exit_code == 0
    assert f"ssh -F {config} gpu-dev-{rid[:8]}" in connected.stderr, "connect says what it runs"
    assert (tmp_path / "ssh-args").read_text().split() == ["-F", str(config), f"gpu-dev-{rid[:8]}"]
    assert config.stat().st_mode & 0o777 == 0o600
    text = config.read_text()
    assert "HostName 10.0.0.7" in text and "Port 30123" in text and "User dev" in text
    assert "ForwardAgent no" in text, "the owner's agent is not forwarded by default"
    assert "warning: a forwarded SSH agent" not in connected.stderr
    forwarded = run("connect", rid[:8], "--forward-agent")
    assert forwarded.exit_code == 0
    assert "the reservation's owner has passwordless sudo there" in forwarded.stderr
    assert (tmp_path / "ssh-args").read_text().split() == [
        "-F",
        str(config),
        "-o",
        "ForwardAgent=yes",
        f"gpu-dev-{rid[:8]}",
    ]
    shown = run("show", rid[:8]).stdout
    assert f"gpu-dev connect {rid[:8]}" in shown
    assert f"SSH:     ssh -F {config} gpu-dev-{rid[:8]}" in shown
    assert f"vscode://vscode-remote/ssh-remote+gpu-dev-{rid[:8]}/home/dev" in shown
    # cancelling forgets the config
    assert run("cancel", rid[:8]).exit_code == 0 and not config.exists()


def test_listing_writes_configs_of_active_reservations_and_prunes_ended_ones(
    run, local_cloud, tmp_path
):
    rid = _json(run("-o", "json", "reserve", "-t", "t4", "--no-wait"))["reservation_id"]
    config = tmp_path / "gpu-dev" / f"{rid[:8]}-sshconfig"
    assert run("-o", "json", "list").exit_code == 0 and not config.exists()
    _activate(local_cloud, rid)
    assert run("-o", "json", "show", rid[:8]).exit_code == 0 and config.exists()
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by a test',"
            " status = 'expired', reservation_ended = now()"
            " WHERE reservation_id = %s",
            (rid,),
        )
    assert run("-o", "json", "list").exit_code == 0
    assert not config.exists(), "an ended reservation's config is pruned by any listing"


def test_ctrl_c_while_waiting_leaves_it_running_without_a_terminal(run, local_cloud, monkeypatch):
    import gpudev_cli.commands.reserve as reserve

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(reserve.time, "sleep", interrupted)
    result = run("reserve", "-t", "t4", "-h", "1", "--no-interactive")
    assert result.exit_code == 0
    assert "Stopped waiting; reservation" in result.stderr and "continues" in result.stderr
    rid = result.stderr.split("reservation ")[1][:8]
    assert _json(run("-o", "json", "show", rid))["cancel_requested_at"] is None


def test_ctrl_c_while_waiting_offers_to_cancel(run, monkeypatch):
    import gpudev_cli.commands.reserve as reserve

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(reserve.time, "sleep", interrupted)
    result = run("reserve", "-t", "t4", "-h", "1", "--disk", "none", "--interactive", input="y\n")
    assert result.exit_code == 0, result.output
    rid = result.stderr.split("Cancellation of ")[1][:8]
    assert _json(run("-o", "json", "show", rid))["cancel_requested_at"] is not None


def test_shell_completion_scripts(run):
    bash = run("completion", "bash", api=False)
    assert bash.exit_code == 0 and "_GPU_DEV_COMPLETE=bash_complete" in bash.stdout
    assert "compdef" in run("completion", "zsh", api=False).stdout


def test_a_pod_without_jupyter_shows_the_reason_and_refuses_enabling_it(run, local_cloud):
    """What the readiness check writes when node 0's check said the image has no jupyter-lab
    (the lifecycle tier drives the real path: tests/lifecycle/test_jupyter_check.py): `show`
    prints the reason instead of a URL, in the panel and in JSON, and `edit --enable-jupyter`
    is refused with it (409), recording nothing."""
    rid = _json(run("-o", "json", "reserve", "-t", "t4", "-h", "2", "--no-wait"))["reservation_id"]
    reason = "the image pytorch/pytorch:x has no jupyter-lab (...); operators: see deploy/dev-image"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET status = 'active', launched_at = now(),"
            " expires_at = now() + interval '2 hours', node_ip = '54.1.2.3', node_port = 30022,"
            " jupyter_available = false, jupyter_error = %s,"
            " jupyter_url = 'http://54.1.2.3:30888/lab?token=dead'"  # never shown: unavailable
            " WHERE reservation_id = %s",
            (reason, rid),
        )
    shown = run("show", rid)
    assert shown.exit_code == 0, shown.output
    assert f"Jupyter: unavailable: {reason}" in " ".join(shown.stdout.split())
    assert "token=dead" not in shown.stdout
    shown_json = _json(run("-o", "json", "show", rid))
    assert (shown_json["jupyter_url"], shown_json["jupyter_available"]) == (None, False)
    assert shown_json["jupyter_error"] == reason
    refused = run("edit", rid[:8], "--enable-jupyter")
    assert refused.exit_code == 1
    assert "HTTP 409" in refused.stderr and "Jupyter cannot be enabled" in refused.stderr
    assert "deploy/dev-image" in refused.stderr
    after = _json(run("-o", "json", "show", rid))
    assert (after["jupyter_enabled"], after["jupyter_url"]) == (False, None)
    with psycopg.connect(local_cloud.database_url) as conn:
        row = conn.execute(
            "SELECT change_generation FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()
    assert row == (0,)
    changes = [j for j in drain_jobs(local_cloud) if j.kind == "reservation_changed"]
    assert rid not in {str(j.reservation_id) for j in changes}
