"""`reserve --preserve-entrypoint` (docs/images.md#the-images-own-entrypoint) without I/O:
the rules' sentences for each request where it makes no sense, the pod that runs its image's
own entrypoint (no command, probe, ports, Jupyter check or tools; still Pod Security
baseline and valid), the stand-in's line for its output, and the CLI's request and panel."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from click.testing import CliRunner

from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from gpudev.cluster.pod_entrypoint import SETTLE_SECONDS, settle_seconds, still_settling
from gpudev.errors import InvalidRequest
from gpudev.images.entrypoint import (
    check_entrypoint_jupyter,
    check_entrypoint_nodes,
    check_entrypoint_request,
)
from gpudev_cli import context, render
from gpudev_cli.main import cli
from localcloud.kubernetes import pod_security, validation
from localcloud.kubernetes.container_logs import ENTRYPOINT_OUTPUT, entrypoint_output
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")
IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/github/pytorch/x@sha256:" + "a" * 64
TOOLS = "123456789012.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-tools:1"


@pytest.mark.parametrize(
    ("check", "sentence"),
    [
        (lambda: check_entrypoint_request(None, False), "name the image with --image"),
        (lambda: check_entrypoint_request("ubuntu", True), "and --jupyter do not go together"),
        (lambda: check_entrypoint_nodes(2), "runs on one node, and this request needs 2"),
        (lambda: check_entrypoint_jupyter(True, True), "Jupyter cannot be enabled"),
    ],
)
def test_preserve_entrypoint_where_it_makes_no_sense_is_refused_with_a_sentence(check, sentence):
    with pytest.raises(InvalidRequest, match=sentence):
        check()


def test_preserve_entrypoint_with_an_image_on_one_node_is_accepted():
    check_entrypoint_request("ubuntu", False)
    check_entrypoint_nodes(1)
    check_entrypoint_jupyter(True, False)
    check_entrypoint_jupyter(False, True)  # an ordinary reservation keeps its Jupyter switch


def _pod(preserve: bool, tools_image: str = "") -> dict[str, Any]:
    reservation = _reservation("alice", T4, 1, 1).model_copy(
        update={"preserve_entrypoint": preserve, "jupyter_enabled": False}
    )
    placement = Placement(0, "i-0abc", "10.0.0.1", 1, None, False)
    return objects.pod(reservation, T4, placement, IMAGE, None, tools_image)


def test_the_pod_runs_the_images_own_entrypoint_with_no_ssh():
    pod = _pod(True, TOOLS)
    spec = pod["spec"]
    (container,) = spec["containers"]
    for field in ("command", "args", "readinessProbe", "ports"):
        assert field not in container
    assert "initContainers" not in spec  # no Jupyter check, no tools: no SSH to bring
    assert container["image"] == IMAGE
    assert "/home/dev" in [m["mountPath"] for m in container["volumeMounts"]]
    assert pod_security.violations(pod) == []
    assert validation.validate("pods", pod) == []


def test_an_ordinary_pod_keeps_the_startup_script_and_the_ssh_probe():
    (container,) = _pod(False)["spec"]["containers"]
    assert container["command"][0] == "/bin/bash" and "readinessProbe" in container


def test_the_stand_in_prints_a_line_for_an_image_entrypoint_and_none_for_a_command():
    assert entrypoint_output({"image": IMAGE}) == f"{ENTRYPOINT_OUTPUT} {IMAGE}"
    assert entrypoint_output({"image": IMAGE, "command": ["/bin/true"]}) == ""


def test_reserve_sends_preserve_entrypoint(monkeypatch):
    sent: list[Any] = []

    class Client:
        def request(self, method: str, url: str, body: object = None) -> dict[str, object]:
            sent.append(body)
            return {"reservation_id": "5f0c1a2b-0000-4000-8000-000000000000", "status": "pending"}

    monkeypatch.setattr(context.Context, "client", lambda self: Client())
    monkeypatch.setattr(context.Context, "emit", lambda self, data, render: None)
    args = ["reserve", "-t", "t4", "-g", "1", "-h", "1", "--disk", "none", "--no-wait"]
    CliRunner().invoke(cli, [*args, "--image", "ubuntu", "--preserve-entrypoint"])
    CliRunner().invoke(cli, args)
    flags = [b["preserve_entrypoint"] for b in sent if isinstance(b, dict) and "gpu_type" in b]
    assert flags == [True, False]


def test_show_of_an_active_entrypoint_reservation_says_no_ssh_and_points_at_logs(capsys):
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": None,
        "status": "active",
        "gpu_type": "t4",
        "gpu_count": 1,
        "total_nodes": 1,
        "duration_hours": 1.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "launched_at": "2026-11-24T00:02:00+00:00",
        "expires_at": "2026-11-24T01:02:00+00:00",
        "jupyter_enabled": False,
        "disk_name": None,
        "image": "docker.io/library/ubuntu:24.04",
        "image_digest": "sha256:" + "b" * 64,
        "preserve_entrypoint": True,
    }
    render.reservation_panel(reservation)
    out = capsys.readouterr().out
    assert "SSH:     none: the image's own entrypoint runs" in out
    assert "gpu-dev logs 5f0c1a2b" in out
    assert "its own entrypoint and command" in out
    assert "gpu-dev connect" not in out


def _running(started: str, restarts: int = 0) -> dict[str, Any]:
    state = {"running": {"startedAt": started}}
    status = {"name": "gpu-dev", "state": state, "restartCount": restarts}
    return {"status": {"containerStatuses": [status]}}


STARTED = "2026-11-27T22:00:00Z"
EPOCH = 1_795_816_800.0  # STARTED as epoch seconds


def test_an_entrypoint_counts_once_it_has_run_the_settle_time_without_a_restart():
    assert datetime.fromisoformat(STARTED.replace("Z", "+00:00")).timestamp() == EPOCH
    assert "active once it has run 10 s" in str(still_settling([_running(STARTED)], EPOCH + 9, 10))
    assert still_settling([_running(STARTED)], EPOCH + 10, 10) is None
    restarted = still_settling([_running(STARTED, restarts=1)], EPOCH + 60, 10)
    assert "restarted" in str(restarted)
    waiting = {"status": {"containerStatuses": [{"name": "gpu-dev", "state": {"waiting": {}}}]}}
    assert "restarted" in str(still_settling([waiting], EPOCH + 60, 10))


def test_the_settle_time_is_ten_seconds_or_a_quarter_of_a_short_ready_timeout():
    assert settle_seconds(600) == SETTLE_SECONDS == 10
    assert settle_seconds(6) == 1.5
