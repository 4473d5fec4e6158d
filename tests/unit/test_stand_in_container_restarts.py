"""The stand-in's kubelet with a running pod's container that exits
(localcloud/kubernetes/container_restarts.py): it terminates with its exit code and its
log's tail, is restarted at once, then after a growing back-off during which it waits in
CrashLoopBackOff with its last run in `lastState`, the pod Running and not Ready, as the
real kubelet does for restartPolicy Always/OnFailure; with Never (or OnFailure and exit 0)
the pod ends. Driven pass by pass as the kubelet drives it (Kubelet._run), on a pod dict
started as the kubelet starts one."""

from __future__ import annotations

import time
from typing import Any

from gpudev.cluster.pod_readiness import pods_state
from localcloud.kubernetes.container_restarts import ContainerRestarts, Crash
from localcloud.kubernetes.kubelet import _start_pod
from localcloud.kubernetes.restart_back_off import BackOff

IMAGE = "no-sshd:1"
NO_SSHD = Crash(1, log="installing openssh-server\nno sshd in this image\n")
PROBE = {"tcpSocket": {"port": 22}}


def _pod(policy: str, *containers: dict[str, Any]) -> dict[str, Any]:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "spec": {"restartPolicy": policy, "containers": list(containers)},
        "status": {"phase": "Pending"},
    }
    _start_pod(pod, node="node-1")
    return pod


def _dev(image: str = IMAGE, **more: Any) -> dict[str, Any]:
    return {
        "name": "gpu-dev",
        "image": image,
        "command": ["/bin/bash", "-c", "startup"],
        "readinessProbe": PROBE,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        **more,
    }


def _pass(
    pod: dict[str, Any],
    restarts: ContainerRestarts,
    crashing: dict[str, Crash] | None = None,
    shell_less: frozenset[str] = frozenset(),
) -> bool:
    """One kubelet pass over a running pod; whether it changed anything."""
    change = restarts.change(pod, {IMAGE: NO_SSHD} if crashing is None else crashing, shell_less)
    if change is not None:
        change(pod)
    return change is not None


def _status(pod: dict[str, Any], name: str = "gpu-dev") -> dict[str, Any]:
    return next(s for s in pod["status"]["containerStatuses"] if s["name"] == name)


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == kind)


def test_a_crashing_container_is_restarted_at_once_then_backs_off_growing():
    pod = _pod("OnFailure", _dev())
    restarts = ContainerRestarts(BackOff(initial_seconds=0.05, max_seconds=0.1))
    assert "running" in _status(pod)["state"]
    _pass(pod, restarts)  # it exits
    dev = _status(pod)
    assert dev["state"]["terminated"] | {"startedAt": "", "finishedAt": ""} == {
        "exitCode": 1,
        "reason": "Error",
        "message": "installing openssh-server\nno sshd in this image\n",
        "startedAt": "",
        "finishedAt": "",
        "containerID": "containerd://u-1-gpu-dev",
    }
    assert (dev["restartCount"], dev["ready"], dev["started"]) == (0, False, False)
    assert "lastState" not in dev
    _pass(pod, restarts)  # its first exit: restarted at once
    dev = _status(pod)
    assert "running" in dev["state"] and dev["restartCount"] == 1
    assert dev["lastState"]["terminated"]["exitCode"] == 1
    assert dev["ready"] is False  # its readiness probe has to pass first

    _pass(pod, restarts)  # exits again: now it backs off
    _pass(pod, restarts)
    dev = _status(pod)
    assert dev["state"] == {
        "waiting": {
            "reason": "CrashLoopBackOff",
            "message": "back-off 50ms restarting failed container=gpu-dev pod=p_ns(u-1)",
        }
    }
    assert dev["restartCount"] == 1 and dev["started"] is False
    assert dev["lastState"]["terminated"]["message"].endswith("no sshd in this image\n")
    assert not _pass(pod, restarts)  # within the back-off: nothing happens

    time.sleep(0.06)  # the back-off passed: restarted, exits, waits twice as long
    for _ in range(3):
        _pass(pod, restarts)
    dev = _status(pod)
    assert dev["restartCount"] == 2
    assert dev["state"]["waiting"]["message"].startswith("back-off 100ms ")
    time.sleep(0.11)
    for _ in range(3):
        _pass(pod, restarts)
    dev = _status(pod)
    assert dev["restartCount"] == 3
    assert dev["state"]["waiting"]["message"].startswith("back-off 100ms ")  # the cap

    # Through it all: Running, never ready.
    assert pod["status"]["phase"] == "Running"
    for kind in ("ContainersReady", "Ready"):
        condition = _condition(pod, kind)
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "ContainersNotReady",
            "containers with unready status: [gpu-dev]",
        )


def test_a_container_that_ran_longer_than_twice_the_cap_is_restarted_at_once():
    """client-go's hasExpired: a run longer than twice the back-off's cap since the last
    restart expires the back-off; the restart is immediate (terminated, then running with
    its count grown, never waiting) and the next quick crash waits the first delay again."""
    pod = _pod("OnFailure", _dev())
    clock = [1000.0]  # stepped by the test: a loaded machine's pauses cannot expire it early
    restarts = ContainerRestarts(
        BackOff(initial_seconds=0.02, max_seconds=0.25), clock=lambda: clock[0]
    )
    for _ in range(4):  # exits, restarted at once, exits again: backing off
        _pass(pod, restarts)
    assert _status(pod)["state"]["waiting"]["message"].startswith("back-off 20ms ")
    clock[0] += 0.03
    _pass(pod, restarts, crashing={})  # restarted, and this time it keeps running
    assert "running" in _status(pod)["state"] and _status(pod)["restartCount"] == 2
    clock[0] += 0.55  # longer than 2 × 250 ms since that restart
    _pass(pod, restarts)  # it exits
    assert _status(pod)["state"]["terminated"]["exitCode"] == 1
    # what our readiness check may see now: exited again after a restart, final
    assert pods_state([pod], 1).failed
    _pass(pod, restarts)  # restarted at once: no CrashLoopBackOff
    dev = _status(pod)
    assert "running" in dev["state"] and dev["restartCount"] == 3
    _pass(pod, restarts)  # a quick crash again: the back-off starts over from its first delay
    _pass(pod, restarts)
    assert _status(pod)["state"]["waiting"]["message"].startswith("back-off 20ms ")


def test_each_run_is_a_new_container_and_a_pod_that_ended_is_not_ready_by_its_phase():
    pod = _pod("OnFailure", _dev())
    restarts = ContainerRestarts()
    _pass(pod, restarts)
    _pass(pod, restarts)  # restarted at once
    dev = _status(pod)
    assert dev["containerID"] == "containerd://u-1-gpu-dev-1"
    assert dev["lastState"]["terminated"]["containerID"] == "containerd://u-1-gpu-dev"
    _pass(pod, restarts)  # the second run exits with its own id
    assert _status(pod)["state"]["terminated"]["containerID"] == "containerd://u-1-gpu-dev-1"

    for policy, crash, phase, reason in (
        ("Never", NO_SSHD, "Failed", "PodFailed"),
        ("OnFailure", Crash(0), "Succeeded", "PodCompleted"),
    ):
        ended = _pod(policy, _dev())
        _pass(ended, ContainerRestarts(), crashing={IMAGE: crash})
        assert ended["status"]["phase"] == phase
        for kind in ("ContainersReady", "Ready"):  # as the kubelet's generate.go writes them
            condition = _condition(ended, kind)
            assert (condition["status"], condition["reason"]) == ("False", reason)
            assert "message" not in condition


def test_a_container_that_comes_up_after_a_restart_keeps_its_count_and_last_state():
    pod = _pod("Always", _dev(readinessProbe=None))
    restarts = ContainerRestarts()
    _pass(pod, restarts)
    assert _condition(pod, "Ready")["status"] == "False"
    _pass(pod, restarts, crashing={})  # the cause went away: restarted, and it stays up
    assert not _pass(pod, restarts, crashing={})
    dev = _status(pod)
    assert "running" in dev["state"] and dev["restartCount"] == 1
    assert dev["lastState"]["terminated"]["exitCode"] == 1
    assert dev["ready"] is True  # no probe: ready as soon as it runs
    assert _condition(pod, "Ready")["status"] == "True"
    assert "reason" not in _condition(pod, "Ready")


def test_with_restart_policy_never_the_pod_fails_and_with_on_failure_exit_0_it_succeeds():
    never = _pod("Never", _dev())
    _pass(never, ContainerRestarts())
    assert never["status"]["phase"] == "Failed"
    assert _status(never)["state"]["terminated"]["exitCode"] == 1
    assert _status(never)["restartCount"] == 0

    done = _pod("OnFailure", _dev())
    _pass(done, ContainerRestarts(), crashing={IMAGE: Crash(0, log="bye\n")})
    assert done["status"]["phase"] == "Succeeded"
    terminated = _status(done)["state"]["terminated"]
    assert (terminated["reason"], "message" in terminated) == ("Completed", False)

    always = _pod("Always", _dev())  # Always restarts even a container that exited 0
    restarts = ContainerRestarts()
    for _ in range(4):
        _pass(always, restarts, crashing={IMAGE: Crash(0)})
    assert always["status"]["phase"] == "Running"
    assert _status(always)["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_the_message_is_the_file_else_the_log_tail_only_with_fallback_to_logs_on_error():
    pod = _pod("OnFailure", _dev(terminationMessagePolicy="File"))
    _pass(pod, ContainerRestarts())
    assert "message" not in _status(pod)["state"]["terminated"]
    wrote = _pod("OnFailure", _dev())
    crash = Crash(1, message="x" * 5000 + "why\n", log="the log\n")
    _pass(wrote, ContainerRestarts(), crashing={IMAGE: crash})
    message = _status(wrote)["state"]["terminated"]["message"]
    assert len(message) == 4096 and message.endswith("why\n")  # the kubelet keeps 4096 bytes
    noisy = _pod("OnFailure", _dev())
    log = "".join(f"line {i}\n" for i in range(200))
    _pass(noisy, ContainerRestarts(), crashing={IMAGE: Crash(2, log=log)})
    message = _status(noisy)["state"]["terminated"]["message"]
    assert message.startswith("line 120\n") and message.endswith("line 199\n")  # 80 lines


def test_a_shell_command_cannot_start_in_an_image_without_a_shell():
    pod = _pod("OnFailure", _dev(image="distroless:1"))
    _pass(pod, ContainerRestarts(), crashing={}, shell_less=frozenset({"distroless:1"}))
    terminated = _status(pod)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert 'exec: "/bin/bash": stat /bin/bash: no such file or directory' in terminated["message"]


def test_only_the_crashing_container_restarts_and_the_others_run_on():
    pod = _pod("Always", _dev(), _dev(name="other", image="fine:1"))
    restarts = ContainerRestarts()
    for _ in range(4):
        _pass(pod, restarts)
    assert _status(pod)["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    other = _status(pod, "other")
    assert "running" in other["state"] and other["restartCount"] == 0


def test_the_back_off_is_forgotten_with_the_pod():
    pod = _pod("OnFailure", _dev())
    restarts = ContainerRestarts(BackOff(initial_seconds=60, max_seconds=60))
    for _ in range(4):  # exits twice: backing off for a minute
        _pass(pod, restarts)
    assert not _pass(pod, restarts)
    restarts.forget_pods_but(set())
    assert _pass(pod, restarts)  # nothing remembered: due at once


def test_a_pod_deleted_since_it_was_listed_is_left_as_it_is():
    pod = _pod("OnFailure", _dev())
    restarts = ContainerRestarts()
    _pass(pod, restarts)  # exited: a restart is due
    change = restarts.change(pod, {IMAGE: NO_SSHD}, frozenset())
    assert change is not None
    pod["metadata"]["deletionTimestamp"] = "2026-11-24T08:00:10Z"  # meanwhile, in the store
    before = _status(pod)["state"]
    change(pod)
    assert _status(pod)["state"] == before and _status(pod)["restartCount"] == 0
