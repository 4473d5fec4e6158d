"""Whether a reservation's pods are ready, and if not, why, in words a user can act on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    failed: bool = False  # a pod ended (phase Failed, e.g. refused by the kubelet): final


def pods_state(pods: list[dict[str, Any]], expected: int) -> PodsState:
    """Ready when every expected pod has the `Ready` condition, which a pod with our
    readiness probe gets only once sshd answers (Running is not enough); otherwise the most
    telling reason it is not (unschedulable, image pull, crash, SSH not answering yet)."""
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
            problems.append(
                f"pod {pod['metadata']['name']} failed: {status.get('reason', '')} "
                f"{status.get('message', '')}".strip()
            )
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                problems.append(f"unschedulable: {condition.get('message', '')}")
        for init in status.get("initContainerStatuses") or []:
            ended = (init.get("state") or {}).get("terminated") or {}
            if ended.get("exitCode") not in (None, 0):
                problems.append(
                    f"init container {init.get('name')} failed (exit {ended['exitCode']}: "
                    f"{(ended.get('message') or ended.get('reason') or '').strip()[:200]})"
                )
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


def _condition(status: dict[str, Any], kind: str) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None
