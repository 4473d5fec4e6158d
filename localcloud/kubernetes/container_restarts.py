"""What the kubelet does when a running pod's container exits (kubernetes.io "Pod
lifecycle", "Container restart policy"): its status is `state.terminated` {exitCode, reason
Error (or Completed, StartError, OOMKilled), message, startedAt, finishedAt}, not ready, and
the pod's ContainersReady and Ready turn False. Then, by the pod's restartPolicy: Always
restarts it whatever its exit code, OnFailure when it failed, Never not. A restart comes at
once after its first exit, then after the back-off (`restart_back_off.py`), during which the
container waits with reason CrashLoopBackOff and its back-off message; `lastState.terminated`
is its last run and `restartCount` counts the restarts. The pod stays Running meanwhile (not
Ready); it ends only once every container terminated for good: Failed if one failed, else
Succeeded (ContainersReady and Ready then False, reason PodFailed or PodCompleted). Each
run is a new container (its own containerID).

The stand-in has no container runtime, so why a container exits is the image's, as a test
declares it: an image in the kubelet's `crashing_images` makes its containers exit at once
(`Crash`: the exit code, what they wrote to the termination message file and what they
logged; with `FallbackToLogsOnError` and no message, the log's tail, as for init
containers), and in a shell-less image a shell command
cannot start (StartError, exit 128, containerd's words). Such a container is seen running for
one kubelet pass before it exits. Other containers run until the pod is deleted."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes.init_containers import (
    CRASH_LOOP,
    MAX_MESSAGE_BYTES,
    Outcome,
    cannot_start,
    fallback_message,
    shell_of,
)
from localcloud.kubernetes.restart_back_off import KUBELET_BACK_OFF, BackOff, RestartBackOff
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
Change = Callable[[Obj], None]


@dataclass(frozen=True)
class Crash:
    """What a container of a crashing image does at once: writes `message` to its
    termination message file, logs `log`, exits with `exit_code` (`reason`: the kubelet's,
    Error/Completed by the code unless given, e.g. OOMKilled)."""

    exit_code: int = 1
    message: str = ""
    log: str = ""
    reason: str = ""


class ContainerRestarts:
    def __init__(
        self, back_off: BackOff = KUBELET_BACK_OFF, clock: Callable[[], float] = time.monotonic
    ):
        self.restarts = RestartBackOff(back_off, clock)

    def forget_pods_but(self, uids: set[str]) -> None:
        self.restarts.forget_pods_but(uids)

    def change(
        self,
        pod: Obj,
        crashing_images: Mapping[str, Crash],
        shell_less_images: frozenset[str],
    ) -> Change | None:
        """This pass's change to a Running pod's containers, None if there is nothing to do:
        one whose image makes it exit terminates; one that has just exited is restarted (at
        once, else after its back-off) or stays terminated, by the restart policy; one
        waiting in CrashLoopBackOff restarts once its back-off passed."""

        def due(obj: Obj) -> list[tuple[Obj, Obj, str]]:
            """(container, status, what to do) for each container with something to do."""
            specs = {c["name"]: c for c in obj["spec"].get("containers", [])}
            work = []
            for status in obj["status"].get("containerStatuses") or []:
                container, state = specs.get(status["name"], {}), status.get("state") or {}
                if "running" in state:
                    if _exit(container, crashing_images, shell_less_images) is not None:
                        work.append((container, status, "exit"))
                elif "terminated" in state:
                    if _restarts(obj, state["terminated"]):
                        work.append((container, status, "exited"))
                elif (state.get("waiting") or {}).get("reason") == CRASH_LOOP and (
                    self.restarts.due(obj, status["name"])
                ):
                    work.append((container, status, "restart"))
            return work

        if not due(pod):
            return None

        def apply(obj: Obj) -> None:
            if obj["metadata"].get("deletionTimestamp") or obj["status"].get("phase") != "Running":
                return  # deleted or ended since it was listed: nothing restarts any more
            for container, status, action in due(obj):
                if action == "exit":
                    outcome = _exit(container, crashing_images, shell_less_images)
                    assert outcome is not None
                    _terminate(obj, status, outcome)
                elif action == "exited":
                    message = self.restarts.after_failure(obj, status["name"])
                    if message is None:  # its first exit: restarted at once
                        _restart(obj, container, status)
                    else:
                        status.update(
                            lastState={"terminated": status["state"]["terminated"]},
                            state={"waiting": {"reason": CRASH_LOOP, "message": message}},
                            started=False,
                        )
                else:
                    _restart(obj, container, status)
            _settle(obj)

        return apply


def _exit(
    container: Obj, crashing_images: Mapping[str, Crash], shell_less_images: frozenset[str]
) -> Outcome | None:
    """How a running container ends this pass, None if it keeps running."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    image = container.get("image", "")
    if image in shell_less_images and shell_of(argv):
        return cannot_start(argv[0])
    crash = crashing_images.get(image)
    if crash is None:
        return None
    message = crash.message.encode()[-MAX_MESSAGE_BYTES:]
    if not message and crash.exit_code:
        message = fallback_message(container, crash.log.encode())
    moment = now()
    return Outcome(crash.exit_code, message.decode(errors="replace"), moment, moment, crash.reason)


def _restarts(pod: Obj, terminated: Obj) -> bool:
    """Whether the kubelet restarts a container that ended so, by the pod's restartPolicy."""
    policy = pod["spec"].get("restartPolicy") or "Always"
    return policy == "Always" or (policy == "OnFailure" and terminated.get("exitCode") != 0)


def _terminate(pod: Obj, status: Obj, outcome: Outcome) -> None:
    started = (status["state"].get("running") or {}).get("startedAt", outcome.started_at)
    terminated = {
        "exitCode": outcome.exit_code,
        "reason": outcome.reason or ("Completed" if outcome.exit_code == 0 else "Error"),
        "startedAt": started if outcome.reason != "StartError" else outcome.started_at,
        "finishedAt": outcome.finished_at,
        "containerID": status.get("containerID", ""),
    }
    if outcome.message:
        terminated["message"] = outcome.message
    status.update(state={"terminated": terminated}, ready=False, started=False)


def _restart(pod: Obj, container: Obj, status: Obj) -> None:
    """The container runs again, a new container (its own containerID; `lastState` keeps
    the last one's): ready at once unless a readiness probe has to pass first."""
    ended = status["state"].get("terminated")
    if ended:
        status["lastState"] = {"terminated": ended}
    count = status.get("restartCount", 0) + 1
    status.update(
        state={"running": {"startedAt": now()}},
        started=True,
        ready=not container.get("readinessProbe"),
        restartCount=count,
        containerID=f"containerd://{pod['metadata']['uid']}-{status['name']}-{count}",
    )


def _settle(pod: Obj) -> None:
    """The pod's phase and readiness conditions after its containers changed."""
    statuses = pod["status"].get("containerStatuses") or []
    ended = [(s.get("state") or {}).get("terminated") for s in statuses]
    terminal = None
    if all(ended) and not any(_restarts(pod, e) for e in ended if e):
        failed = any(e.get("exitCode") != 0 for e in ended if e)
        terminal = pod["status"]["phase"] = "Failed" if failed else "Succeeded"
    unready = [s["name"] for s in statuses if not s.get("ready")]
    moment = now()
    for condition in pod["status"].get("conditions") or []:
        if condition["type"] not in ("ContainersReady", "Ready"):
            continue
        if terminal:  # the kubelet's words for a pod that ended (generate.go)
            if condition["status"] != "False":
                condition["lastTransitionTime"] = moment
            condition.pop("message", None)
            reason = "PodFailed" if terminal == "Failed" else "PodCompleted"
            condition.update(status="False", reason=reason)
        elif unready:
            message = f"containers with unready status: [{' '.join(unready)}]"
            if condition["status"] != "False":
                condition["lastTransitionTime"] = moment
            condition.update(status="False", reason="ContainersNotReady", message=message)
        elif condition["status"] != "True":
            condition.update(status="True", lastTransitionTime=moment)
            condition.pop("reason", None)
            condition.pop("message", None)
