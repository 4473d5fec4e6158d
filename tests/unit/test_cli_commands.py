"""The `gpu-dev` command tree: `--help` lists every command, each command's help needs no API
or credentials, the pieces the commands share behave, and no CLI module outgrows ~300 lines."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gpudev_cli import context, prompts, render
from gpudev_cli.main import cli

CLI_PACKAGE = Path(__file__).resolve().parents[2] / "cli" / "gpudev_cli"
COMMANDS = [
    "admin",
    "avail",
    "cancel",
    "completion",
    "config",
    "connect",
    "disk",
    "edit",
    "events",
    "extend",
    "image",
    "list",
    "logs",
    "reserve",
    "show",
    "status",
    "usage",
]


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for name, command in group.commands.items():
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += _command_paths(command, (*prefix, name))
    return paths


def test_help_lists_every_command():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    lines = result.output.split("Commands:\n")[1].splitlines()
    assert [line.split()[0] for line in lines if line.strip()] == COMMANDS
    assert sorted(cli.commands) == COMMANDS
    for option in ("--api-url", "--profile", "--region", "--output", "--version"):
        assert option in result.output


@pytest.mark.parametrize("path", _command_paths(cli), ids=" ".join)
def test_every_command_has_help_without_an_api(path, monkeypatch):
    monkeypatch.delenv("GPU_DEV_API_URL", raising=False)
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: cli {' '.join(path)} ")


def test_watch_refreshes_until_ctrl_c(monkeypatch):
    sleeps: list[float] = []
    monkeypatch.setattr(context.time, "sleep", sleeps.append)
    monkeypatch.setattr(context.console, "clear", lambda: None)
    assert context.wait_for_refresh(watch=False, interval=5.0) is False
    assert context.wait_for_refresh(watch=True, interval=5.0) is True
    assert sleeps == [5.0]

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(context.time, "sleep", interrupted)
    assert context.wait_for_refresh(watch=True, interval=5.0) is False


def test_cluster_status_table_shows_every_total(capsys):
    totals = {
        "total_gpus": 16,
        "available_gpus": 11,
        "gpus_in_use": 5,
        "queued_gpus": 8,
        "active_reservations": 3,
        "queued_reservations": 2,
        "by_gpu_type": [
            {
                "gpu_type": "h100",
                "available_gpus": 0,
                "queue_length": 2,
                "estimated_wait_minutes": 579,
            },
            {"gpu_type": "t4", "available_gpus": 4, "queue_length": 0, "estimated_wait_minutes": 0},
            {
                "gpu_type": "b200",
                "available_gpus": 0,
                "queue_length": 0,
                "estimated_wait_minutes": None,
            },
        ],
    }
    render.cluster_status_table(totals)
    printed = capsys.readouterr().out
    assert "GPU cluster status" in printed and "Available GPUs" in printed
    assert "Queued reservations" in printed and "11" in printed
    # each type's wait for a new request, as the allocator computed it
    assert "9 h 39 min" in printed and "now" in printed and "unknown" in printed


def test_queued_reservations_show_their_place_and_eta_in_list_and_show(capsys):
    queued = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": "train",
        "status": "queued",
        "gpu_type": "h100",
        "gpu_count": 8,
        "duration_hours": 2.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "queue_position": 1,
        "estimated_wait_minutes": 42,
        "jupyter_enabled": False,
    }
    assert render.queue_place(queued) == "#1, about 42 min"
    render.reservations_table([queued])
    assert "#1, about 42 min" in capsys.readouterr().out
    render.reservation_panel(queued)
    assert "Queue: #1, about 42 min" in capsys.readouterr().out


def test_an_active_reservation_says_when_it_expires_in_clock_minutes_and_timestamps(capsys):
    active = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "status": "active",
        "gpu_type": "t4",
        "gpu_count": 1,
        "duration_hours": 1.0,
        "launched_at": "2026-11-24T00:01:00+00:00",
        "expires_at": "2026-11-24T01:01:00+00:00",
        "expires_in_minutes": 75,
        "jupyter_enabled": False,
    }
    render.reservation_panel(active)
    printed = capsys.readouterr().out
    assert "Started 2026-11-24 00:01 UTC, expires 2026-11-24 01:01 UTC (in 1 h 15 min)" in printed
    assert " ago" not in printed


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("cancelled", "stale: waited 48 h in the queue without getting capacity [the timeout]"),
        ("expired", "expired: its reserved time ran out"),
        ("failed", "the pod was not ready in time: its disk's volume could not be attached"),
    ],
)
def test_show_says_why_any_reservation_ended(capsys, status, reason):
    ended = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "status": status,
        "gpu_type": "t4",
        "gpu_count": 1,
        "duration_hours": 1.0,
        "jupyter_enabled": False,
        "failure_reason": reason,
    }
    render.reservation_panel(ended)
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Ended ({status}): {reason}" in printed  # brackets are text, not markup


@pytest.mark.parametrize(
    ("jupyter", "shown", "hidden"),
    [
        (  # Jupyter is reached through SSH: the command that opens the tunnel, no URL
            {"jupyter_enabled": True, "jupyter_available": True, "jupyter_url": "http://h:1/lab"},
            "Jupyter: gpu-dev connect 5f0c1a2b --jupyter",
            "http://",
        ),
        (
            {
                "jupyter_enabled": True,
                "jupyter_available": False,
                "jupyter_error": "the image x has no jupyter-lab",
                "jupyter_url": "http://h:1/lab",  # never printed without the pod's word
            },
            "Jupyter: unavailable: the image x has no jupyter-lab",
            "http://",
        ),
        (
            {"jupyter_enabled": False, "jupyter_available": False, "jupyter_error": "no jupyter"},
            "Jupyter: unavailable: no jupyter",
            "--enable-jupyter",
        ),
        ({"jupyter_enabled": True, "jupyter_available": None}, "Jupyter: on, starting", "http"),
        (  # a pod from before the check: the API gives its URL, with no verdict
            {"jupyter_enabled": True, "jupyter_available": None, "jupyter_url": "http://h:1/lab"},
            "Jupyter: gpu-dev connect 5f0c1a2b --jupyter",
            "unavailable",
        ),
    ],
)
def test_show_prints_how_to_open_jupyter_only_when_the_pod_has_jupyter(
    capsys, jupyter, shown, hidden
):
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "status": "preparing",
        "gpu_type": "t4",
        "gpu_count": 1,
        "duration_hours": 1.0,
        **jupyter,
    }
    render.reservation_panel(reservation)
    printed = " ".join(capsys.readouterr().out.split())
    assert shown in printed and hidden not in printed


def test_no_cli_module_is_over_300_lines():
    sizes = {
        str(path.relative_to(CLI_PACKAGE)): len(path.read_text().splitlines())
        for path in CLI_PACKAGE.rglob("*.py")
    }
    assert {name: lines for name, lines in sizes.items() if lines > 300} == {}


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["show", "../reservations"], "/v1/disks/..%2Freservations"),
        (["list-content", "a?b#c"], "/v1/disks/a%3Fb%23c/content"),
        (["delete", "--yes", "a/b"], "/v1/disks/a%2Fb"),
        (["restore", "x y"], "/v1/disks/x%20y/restore"),
        (["rename", "a/b", "c"], "/v1/disks/a%2Fb/rename"),
        (["clone", "a/b", "c"], "/v1/disks/a%2Fb/clone"),
    ],
)
def test_a_disk_name_is_one_path_segment(monkeypatch, args, path):
    sent: list[str] = []

    class Client:
        def request(self, method: str, url: str, body: object = None) -> dict[str, object]:
            sent.append(url)
            return {}

    monkeypatch.setattr(context.Context, "client", lambda self: Client())
    monkeypatch.setattr(context.Context, "emit", lambda self, data, render: None)
    CliRunner().invoke(cli, ["disk", *args])
    assert sent == [path]


def test_the_hours_prompt_accepts_the_stated_minimum_exactly():
    @click.command()
    def ask() -> None:
        click.echo(f"chose {prompts.pick_hours()}")

    result = CliRunner().invoke(ask, input="0.0833\n")
    assert "Hours (5 minutes = 0.0833, to 24)" in result.output
    assert result.output.strip().endswith("chose 0.0833")


def test_show_prints_the_volume_the_reservations_disk_is_on(capsys):
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": "data",
        "status": "active",
        "gpu_type": "cpu-x86",
        "gpu_count": 0,
        "duration_hours": 1.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "jupyter_enabled": False,
        "disk_name": "datasets",
        "ebs_volume_id": "vol-0123456789abcdef0",
    }
    render.reservation_panel(reservation)
    assert "Disk: datasets (volume vol-0123456789abcdef0)" in capsys.readouterr().out
    render.reservation_panel({**reservation, "ebs_volume_id": None})
    assert "Disk: datasets " in capsys.readouterr().out


def test_reserve_sends_the_image_asked_for(monkeypatch):
    sent: list[object] = []

    class Client:
        def request(self, method: str, url: str, body: object = None) -> dict[str, object]:
            sent.append(body)
            return {"reservation_id": "5f0c1a2b-0000-4000-8000-000000000000", "status": "pending"}

    monkeypatch.setattr(context.Context, "client", lambda self: Client())
    monkeypatch.setattr(context.Context, "emit", lambda self, data, render: None)
    args = ["reserve", "-t", "t4", "-g", "1", "-h", "1", "--disk", "none", "--no-wait"]
    CliRunner().invoke(cli, [*args, "--image", "ghcr.io/pytorch/pytorch-nightly"])
    CliRunner().invoke(cli, args)
    images = [body.get("image") for body in sent if isinstance(body, dict) and "gpu_type" in body]
    assert images == ["ghcr.io/pytorch/pytorch-nightly", None]


def test_show_prints_the_image_and_the_digest_the_pod_runs(capsys):
    digest = "sha256:" + "a" * 64
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": None,
        "status": "queued",
        "gpu_type": "t4",
        "gpu_count": 1,
        "duration_hours": 1.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "jupyter_enabled": False,
        "disk_name": None,
        "image": "ghcr.io/pytorch/pytorch-nightly:latest",
        "image_digest": digest,
    }
    render.reservation_panel(reservation)
    out = capsys.readouterr().out
    assert "Image: ghcr.io/pytorch/pytorch-nightly:latest" in out and digest in out
    render.reservation_panel({**reservation, "image": None, "image_digest": None})
    assert "Image:" not in capsys.readouterr().out


def test_show_names_the_context_an_image_is_built_from(capsys):
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": None,
        "status": "queued",
        "gpu_type": "t4",
        "gpu_count": 1,
        "duration_hours": 1.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "jupyter_enabled": False,
        "disk_name": None,
        "image": None,
        "image_digest": None,
        "image_build": "ab" * 32,
    }
    render.reservation_panel(reservation)
    assert "Image: context abababababab (--dockerfile)" in capsys.readouterr().out
    digest = "sha256:" + "c" * 64
    render.reservation_panel({**reservation, "image": "r/gpu-dev-images:x", "image_digest": digest})
    out = capsys.readouterr().out
    assert "Image: r/gpu-dev-images:x" in out and "built from context abababababab" in out
