"""Whether a reservation's pods are ready, and if not, why, in words a user can act on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpudev.cluster.vocabulary import CRASH_LOOP

SHOWN_MESSAGE = 200  # characters of a container's termination message in a reason
WAITING_FAILURES = {
    "ErrImagePull": "the image could not be pulled",
    "ImagePullBackOff": "the image could not be pulled",
    "InvalidImageName": "the image name is invalid",
    "CrashLoopBackOff": "the container keeps crashing",
    "CreateContainerConfigError": "the container could not be configured",
}


@dataclass(frozen=True)
class PodsState:
    ready: bool
    problem: str | None  # why it is not ready, in words a user can act on
    # final: a pod ended (phase Failed, e.g. refused by the kubelet), or it cannot start
    failed: bool = False


def pods_state(pods: list[dict[str, Any]], expected: int) -> PodsState:
    """Ready when every expected pod has the `Ready` condition, which a pod with our
    readiness probe gets only once sshd answers (Running is not enough); otherwise the most
    telling reason it is not (unschedulable, image pull, crash, SSH not answering yet).
    Final (`failed`): a pod that ended (phase Failed), or an init container the kubelet
    restarted that failed again (Init:CrashLoopBackOff)."""
    if len(pods) < expected:
        return PodsState(False, f"{len(pods)} of {expected} pods exist")
    problems: list[str] = []
    ready = 0
    failed = False
    for pod in pods:
        status = pod.get("status", {})
        known = len(problems)
        if status.get("phase") == "Failed":
            failed = True
            why = f"{status.get('reason') or ''} {status.get('message') or ''}".strip()
            problems.append(f"pod {pod['metadata']['name']} failed" + (f": {why}" if why else ""))
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                problems.append(f"unschedulable: {condition.get('message', '')}")
        for init in status.get("initContainerStatuses") or []:
            state, restarted = init.get("state") or {}, int(init.get("restartCount") or 0)
            ended = state.get("terminated") or {}
            if (state.get("waiting") or {}).get("reason") == CRASH_LOOP or (
                restarted and ended.get("exitCode") not in (None, 0)
            ):
                # It failed again after the kubelet restarted it: it will not heal by itself
                # (ours is the Jupyter check, a script of shell builtins against the pod's
                # own image), and the pod would hold its GPUs until the ready timeout: final.
                failed = True
                last = ended or (init.get("lastState") or {}).get("terminated") or {}
                problems.append(
                    f"init container {init.get('name')} keeps failing ({CRASH_LOOP}, "
                    f"restarted {restarted} times; last {_exit(last)})"
                )
            elif ended.get("exitCode") not in (None, 0):  # the kubelet restarts it at once
                problems.append(f"init container {init.get('name')} failed ({_exit(ended)})")
        containers = status.get("containerStatuses") or []
        for container in containers:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in WAITING_FAILURES:
                problems.append(
                    f"{WAITING_FAILURES[waiting['reason']]} ({waiting['reason']}: "
                    f"{waiting.get('message', '')})".replace(": )", ")")
                )
        if status.get("phase") == "Running":
            if _condition(status, "Ready") == "True":
                ready += 1
            elif len(problems) == known:  # nothing worse to say about this pod
                problems.append(f"pod {pod['metadata']['name']} runs but SSH is not answering yet")
    if ready == expected:
        return PodsState(True, None)
    return PodsState(False, "; ".join(problems) or "the pod is starting", failed)


def _exit(terminated: dict[str, Any]) -> str:
    """How a container run ended: `exit 1: <its message, else its reason>`, the message's
    last 200 characters (where a runtime's error says what was missing)."""
    said = (terminated.get("message") or terminated.get("reason") or "").strip()
    shown = said if len(said) <= SHOWN_MESSAGE else "…" + said[-SHOWN_MESSAGE:]
    return f"exit {terminated.get('exitCode')}: {shown}"


def _condition(status: dict[str, Any], kind: str) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None
