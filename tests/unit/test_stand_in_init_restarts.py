"""The stand-in's kubelet with an init container that fails
(localcloud/kubernetes/init_container_restarts.py): restarted at once, then after a growing
back-off during which it waits in CrashLoopBackOff with its last run in `lastState`, as the
real kubelet does for restartPolicy Always/OnFailure; with Never the pod is Failed. Driven
pass by pass as the kubelet drives it (Kubelet._initialize), on a pod dict."""

from __future__ import annotations

import shutil
import time
from typing import Any

import pytest

from localcloud.kubernetes import init_containers
from localcloud.kubernetes.init_container_restarts import InitContainerRestarts
from localcloud.kubernetes.restart_back_off import BackOff

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

FAILS = "echo broken >&2; exit 3"
PASSES = "exit 0"
TRUSTED = frozenset({FAILS, PASSES})


def _container(name: str, body: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "img",
        "command": ["/bin/bash", "-c", body],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def _pod(policy: str, *init: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "restartPolicy": policy,
            "initContainers": list(init),
            "containers": [{"name": "main", "image": "img"}],
        },
        "status": {"phase": "Pending"},
    }


def _pass(pod: dict[str, Any], restarts: InitContainerRestarts) -> None:
    """One kubelet pass over the pod's init containers (Kubelet._initialize's branches)."""
    if not init_containers.started(pod):
        init_containers.initializing(pod)
    elif init_containers.failed(pod):
        restarts.after_failure(pod)(pod)
    elif init_containers.backing_off(pod):
        restart = restarts.restart_due(pod)
        if restart is not None:
            restart(pod)
    else:
        init_containers.record(pod, init_containers.run_all(pod, frozenset(), TRUSTED))


def _status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == name)


def test_a_failed_init_container_is_restarted_at_once_then_backs_off_growing():
    pod = _pod("OnFailure", _container("first", PASSES), _container("check", FAILS))
    restarts = InitContainerRestarts(BackOff(initial_seconds=0.05, max_seconds=0.1))
    for _ in range(3):  # start, run (first completes, check fails), restart at once
        _pass(pod, restarts)
    check = _status(pod, "check")
    assert check["restartCount"] == 1 and "running" in check["state"]
    assert check["lastState"]["terminated"]["exitCode"] == 3

    _pass(pod, restarts)  # runs again and fails again: now it backs off
    _pass(pod, restarts)
    check = _status(pod, "check")
    waiting = check["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"] == "back-off 50ms restarting failed container=check pod=p_ns(u-1)"
    assert check["restartCount"] == 1 and check["started"] is False
    assert check["lastState"]["terminated"] | {"startedAt": "", "finishedAt": ""} == {
        "exitCode": 3,
        "reason": "Error",
        "message": "broken\n",
        "startedAt": "",
        "finishedAt": "",
        "containerID": "containerd://u-1-check",
    }
    _pass(pod, restarts)  # within the back-off: nothing happens
    assert _status(pod, "check")["state"] == check["state"]

    time.sleep(0.06)  # the back-off passed: restarted, fails, waits twice as long
    for _ in range(3):
        _pass(pod, restarts)
    check = _status(pod, "check")
    assert check["restartCount"] == 2
    assert check["state"]["waiting"]["message"].startswith("back-off 100ms ")
    time.sleep(0.11)
    for _ in range(3):
        _pass(pod, restarts)
    assert _status(pod, "check")["state"]["waiting"]["message"].startswith("back-off 100ms ")

    # Through it all: Pending, not initialized, the completed one not run again.
    assert pod["status"]["phase"] == "Pending"
    first = _status(pod, "first")
    assert first["state"]["terminated"]["reason"] == "Completed" and first["restartCount"] == 0
    (main,) = pod["status"]["containerStatuses"]
    assert main["state"]["waiting"]["reason"] == "PodInitializing"
    initialized = next(c for c in pod["status"]["conditions"] if c["type"] == "Initialized")
    assert initialized["status"] == "False"
    assert initialized["message"] == "containers with incomplete status: [check]"


def test_with_restart_policy_never_a_failed_init_container_fails_the_pod():
    pod = _pod("Never", _container("check", FAILS), _container("after", PASSES))
    restarts = InitContainerRestarts()
    for _ in range(3):
        _pass(pod, restarts)
    assert pod["status"]["phase"] == "Failed"
    check, after = pod["status"]["initContainerStatuses"]
    assert check["state"]["terminated"]["exitCode"] == 3 and check["restartCount"] == 0
    assert after["state"]["waiting"]["reason"] == "PodInitializing"


def test_an_init_container_that_succeeds_on_a_restart_keeps_its_count_and_last_state():
    pod = _pod("Always", _container("check", FAILS))
    restarts = InitContainerRestarts()
    for _ in range(3):  # start, fail, restart at once
        _pass(pod, restarts)
    pod["spec"]["initContainers"][0]["command"][-1] = PASSES  # the cause went away
    _pass(pod, restarts)
    check = _status(pod, "check")
    assert check["state"]["terminated"]["reason"] == "Completed"
    assert check["restartCount"] == 1 and check["lastState"]["terminated"]["exitCode"] == 3
    assert init_containers.completed(pod)


def test_an_image_without_a_shell_cannot_start_a_shell_command():
    pod = _pod("OnFailure", _container("check", PASSES))
    init_containers.initializing(pod)
    (outcome,) = init_containers.run_all(pod, frozenset(), TRUSTED, frozenset({"img"}))
    assert (outcome.exit_code, outcome.reason) == (128, "StartError")
    assert 'exec: "/bin/bash": stat /bin/bash: no such file or directory' in outcome.message
    init_containers.record(pod, [outcome])
    assert _status(pod, "check")["state"]["terminated"]["reason"] == "StartError"


def test_the_back_off_is_forgotten_with_the_pod():
    pod = _pod("OnFailure", _container("check", FAILS))
    restarts = InitContainerRestarts()
    for _ in range(5):  # fails twice: backing off
        _pass(pod, restarts)
    assert init_containers.backing_off(pod)
    restarts.forget_pods_but(set())
    assert restarts.restart_due(pod) is not None  # nothing remembered: due at once
