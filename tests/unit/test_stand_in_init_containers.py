"""The stand-in's init containers (localcloud/kubernetes/init_containers.py): the statuses the
kubelet writes while they run and once they ended, the command run for real in a sandbox
whose PATH is the image's commands, the termination message as the kubelet keeps it, and the
API server's validation of `spec.initContainers`."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from gpudev.cluster import objects
from localcloud.kubernetes import init_containers, validation

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

DEV_IMAGE = "registry.example/gpu-dev:1"
PUBLIC_IMAGE = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def _script(body: str, **extra: Any) -> dict[str, Any]:
    return {"name": "check", "image": PUBLIC_IMAGE, "command": ["/bin/bash", "-c", body], **extra}


def _pod(*init: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "uid": "u-1"},
        "spec": {
            "initContainers": list(init),
            "containers": [{"name": "gpu-dev", "image": PUBLIC_IMAGE}],
        },
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (DEV_IMAGE, "jupyter=available\n"),
        (PUBLIC_IMAGE, "jupyter=unavailable: no jupyter-lab on PATH ("),
    ],
)
def test_our_jupyter_check_reads_the_images_commands(image: str, message: str):
    check = objects.jupyter_check(image, {"PATH": "/opt/conda/bin:/usr/bin"})
    outcome = init_containers.run(check, frozenset({DEV_IMAGE}))
    assert outcome.exit_code == 0
    assert outcome.message.startswith(message)


def test_a_pod_initializing_is_pending_with_its_containers_waiting():
    pod = _pod(_script("exit 0"), _script("exit 0") | {"name": "second"})
    init_containers.initializing(pod)
    status = pod["status"]
    assert status["phase"] == "Pending"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Initialized"]["status"] == "False"
    assert conditions["Initialized"]["reason"] == "ContainersNotInitialized"
    assert conditions["Ready"]["status"] == "False"
    first, second = status["initContainerStatuses"]
    assert "running" in first["state"] and second["state"]["waiting"]["reason"] == "PodInitializing"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    assert init_containers.started(pod) and not init_containers.completed(pod)


def test_completed_init_containers_are_terminated_completed_with_their_message():
    pod = _pod(
        _script(
            'printf "said %s" "$GREETING" > "$GPU_DEV_ROOT/dev/termination-log"',
            env=[{"name": "GREETING", "value": "hello"}],
        )
    )
    init_containers.initializing(pod)
    trusted = frozenset({pod["spec"]["initContainers"][0]["command"][-1]})
    init_containers.record(pod, init_containers.run_all(pod, frozenset(), trusted))
    (status,) = pod["status"]["initContainerStatuses"]
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (
        0,
        "Completed",
        "said hello",
    )
    assert status["ready"] is True and terminated["containerID"].startswith("containerd://")
    assert init_containers.completed(pod)


def test_a_failed_init_container_stops_the_ones_after_it_and_the_pod_stays_pending():
    pod = _pod(
        _script("echo boom >&2; exit 3", terminationMessagePolicy="FallbackToLogsOnError"),
        _script("exit 0") | {"name": "after"},
    )
    init_containers.initializing(pod)
    trusted = frozenset(c["command"][-1] for c in pod["spec"]["initContainers"])
    outcomes = init_containers.run_all(pod, frozenset(), trusted)
    assert [o.exit_code for o in outcomes] == [3]
    init_containers.record(pod, outcomes)
    first, after = pod["status"]["initContainerStatuses"]
    assert first["state"]["terminated"] | {"startedAt": "", "finishedAt": ""} == {
        "exitCode": 3,
        "reason": "Error",
        "message": "boom\n",  # the log's tail: the policy falls back to logs on error
        "startedAt": "",
        "finishedAt": "",
        "containerID": "containerd://u-1-check",
    }
    assert after["state"]["waiting"]["reason"] == "PodInitializing"
    assert init_containers.failed(pod) and not init_containers.completed(pod)
    assert pod["status"]["phase"] == "Pending"


def test_the_message_is_the_files_last_4096_bytes_and_only_the_file_by_default():
    long = _script('printf "%05000d" 7 > "$GPU_DEV_ROOT/dev/termination-log"')
    assert len(init_containers.run(long, frozenset()).message) == 4096
    failing = _script("echo only-in-the-log; exit 1")  # policy File: the log is not used
    assert init_containers.run(failing, frozenset()).message == ""


def test_the_sandbox_path_holds_only_the_images_commands():
    probe = _script(
        'command -v cat >/dev/null && echo found-cat > "$GPU_DEV_ROOT/dev/termination-log"; '
        'command -v jupyter-lab >> "$GPU_DEV_ROOT/dev/termination-log"'
    )
    assert init_containers.run(probe, frozenset()).message == ""
    found = init_containers.run(probe | {"image": DEV_IMAGE}, frozenset({DEV_IMAGE})).message
    assert found.strip().endswith("image-bin/jupyter-lab")


def test_a_served_pod_runs_only_the_scripts_we_ship():
    """Anyone who can reach the stand-in can create a pod: its init container must not run a
    command a client chose on the machine running the local cloud."""
    chosen = 'echo ran > "$GPU_DEV_ROOT/dev/termination-log"; exit 4'
    pod = _pod(_script(chosen))
    (unrun,) = init_containers.run_all(pod, frozenset())
    assert (unrun.exit_code, unrun.message) == (0, "")
    (ran,) = init_containers.run_all(pod, frozenset(), frozenset({chosen}))
    assert (ran.exit_code, ran.message) == (4, "ran\n")
    ours = _pod(objects.jupyter_check(DEV_IMAGE, {"PATH": "/usr/bin"}))
    (checked,) = init_containers.run_all(ours, frozenset({DEV_IMAGE}))
    assert checked.message == "jupyter=available\n"


def test_a_command_that_is_not_a_shell_completes_at_once_without_a_message():
    outcome = init_containers.run(
        {"name": "c", "image": "x", "command": ["/bin/false"]}, frozenset()
    )
    assert (outcome.exit_code, outcome.message) == (0, "")


def _pod_manifest(init: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "gpu-dev", "image": "i"}], "initContainers": init},
    }


@pytest.mark.parametrize(
    ("init", "field", "kind"),
    [
        ([{"name": "gpu-dev", "image": "i"}], "spec.initContainers[0].name", "Duplicate value"),
        (
            [{"name": "a", "image": "i"}, {"name": "a", "image": "i"}],
            "spec.initContainers[1].name",
            "Duplicate value",
        ),
        (
            [{"name": "a", "image": "i", "readinessProbe": {"tcpSocket": {"port": 22}}}],
            "spec.initContainers[0].readinessProbe",
            "Forbidden",
        ),
        (
            [{"name": "a", "image": "i", "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}}],
            "spec.initContainers[0].lifecycle",
            "Forbidden",
        ),
        (
            [{"name": "a", "image": "i", "terminationMessagePolicy": "Stdout"}],
            "spec.initContainers[0].terminationMessagePolicy",
            "Unsupported value",
        ),
        ([{"name": "a"}], "spec.initContainers[0].image", "Required value"),
    ],
)
def test_init_containers_are_validated_as_the_api_server_does(init, field, kind):
    errors = validation.validate("pods", _pod_manifest(init))
    assert [(e.field, e.type) for e in errors] == [(field, kind)]


def test_a_sidecar_init_container_may_have_a_probe():
    sidecar = {
        "name": "a",
        "image": "i",
        "restartPolicy": "Always",
        "readinessProbe": {"tcpSocket": {"port": 22}},
    }
    assert validation.validate("pods", _pod_manifest([sidecar])) == []
    odd = {"name": "a", "image": "i", "restartPolicy": "OnFailure"}
    assert [e.type for e in validation.validate("pods", _pod_manifest([odd]))] == [
        "Unsupported value"
    ]
