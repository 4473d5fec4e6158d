"""Whether a reservation's pods are ready, and if not, why, in words a user can act on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gpudev.cluster.pod_claims import SHARE, claim_of_event, starting_step
from gpudev.cluster.vocabulary import CRASH_LOOP

SHOWN_MESSAGE = 200  # characters of a container's termination message in a reason
# An event's message: its head (what failed) and its tail (why: EC2's error code comes
# last in an attach failure), the middle cut when longer.
EVENT_HEAD, EVENT_TAIL = 100, 260
WAITING_FAILURES = {
    "ErrImagePull": "the image could not be pulled",
    "ImagePullBackOff": "the image could not be pulled",
    "InvalidImageName": "the image name is invalid",
    "CreateContainerConfigError": "the container could not be configured",
}
# How containerd says the registry has no such image (a tag or repository that does not
# exist): `rpc error: code = NotFound desc = failed to pull and unpack image ...: not found`.
NOT_FOUND = ("code = NotFound", "manifest unknown")
# What a pod's Warning events say when its status does not (a Pending pod waits in
# ContainerCreating while its volume cannot attach or mount); other reasons are shown as
# they are.
EVENT_PROBLEMS = {
    "FailedAttachVolume": "its disk's volume could not be attached",
    "FailedMount": "a volume could not be mounted",
    "Failed": "the container could not start",
    "BackOff": "the kubelet is backing off",
    "FailedCreatePodSandBox": "the pod's sandbox could not be created",
}


@dataclass(frozen=True)
class PodsState:
    ready: bool
    problem: str | None  # why it is not ready, in words a user can act on
    # final: a pod ended (phase Failed, e.g. refused by the kubelet), or it cannot start
    failed: bool = False


def pods_state(
    pods: list[dict[str, Any]],
    expected: int,
    events: Sequence[dict[str, Any]] = (),
    disk: str | None = None,
) -> PodsState:
    """Ready when every expected pod has the `Ready` condition, which a pod with our
    readiness probe gets only once sshd answers (Running is not enough); otherwise the most
    telling reason it is not (unschedulable, image pull, crash, SSH not answering yet, and
    for a Pending pod whose status says nothing, its latest Warning event from `events`:
    a volume that cannot attach or mount).
    Final (`failed`): a pod that ended (phase Failed or Succeeded), or a container, init or
    not, that the kubelet restarted and that failed again (CrashLoopBackOff)."""
    if len(pods) < expected:
        return PodsState(False, f"{len(pods)} of {expected} pods exist")
    problems: list[str] = []
    ready = 0
    failed = False
    for pod in pods:
        status = pod.get("status", {})
        known = len(problems)
        if status.get("phase") in ("Failed", "Succeeded"):  # Succeeded: its command ended
            failed = True
            why = f"{status.get('reason') or ''} {status.get('message') or ''}".strip()
            how = "failed" if status["phase"] == "Failed" else "ended: its containers exited 0"
            problems.append(f"pod {pod['metadata']['name']} {how}" + (f": {why}" if why else ""))
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                # The scheduler's words: "0/2 nodes are available: 2 Insufficient ..."
                problems.append(f"waiting for a node: {condition.get('message', '')}")
        for init in status.get("initContainerStatuses") or []:
            if _failing_again(init):
                # It failed again after the kubelet restarted it: it will not heal by itself
                # (ours is the Jupyter check, a script of shell builtins against the pod's
                # own image), and the pod would hold its GPUs until the ready timeout: final.
                failed = True
                problems.append(f"init container {init.get('name')} keeps failing {_loop(init)}")
            elif ended := _failed_run(init):  # the kubelet restarts it at once
                problems.append(f"init container {init.get('name')} failed ({_exit(ended)})")
            elif said := _waiting_failure(init):  # its image is pulled first: ours shares it
                missing = _image_not_found(init, pod, events)
                problems.append(f"the image does not exist ({missing})" if missing else said)
                failed = failed or missing is not None
        for container in status.get("containerStatuses") or []:
            if _failing_again(container):
                # The dev container (the startup script, then sshd) crashed again right
                # after its restart: what it needs (image, mounts, keys) does not change
                # between runs, so it will not heal either: final, as for init containers.
                failed = True
                problems.append(
                    f"container {container.get('name')} keeps crashing {_loop(container)}"
                )
            elif ended := _failed_run(container):  # its first crash: restarted at once
                problems.append(
                    f"container {container.get('name')} exited ({_exit(ended)}); restarting it"
                )
            elif said := _waiting_failure(container):
                missing = _image_not_found(container, pod, events)
                problems.append(f"the image does not exist ({missing})" if missing else said)
                failed = failed or missing is not None
        warning = _latest_warning(pod, events) if len(problems) == known else None
        if status.get("phase") == "Pending" and warning:
            problems.append(warning)
        if status.get("phase") == "Running":
            if _condition(status, "Ready") == "True":
                ready += 1
            elif len(problems) == known:  # nothing worse to say about this pod
                problems.append(
                    f"waiting for sshd: pod {pod['metadata']['name']} runs but SSH is not "
                    "answering yet"
                )
        if status.get("phase") == "Pending" and len(problems) == known:
            step = _starting_step(pod, disk)
            if step:
                problems.append(step)
    if ready == expected:
        return PodsState(True, None)
    return PodsState(False, "; ".join(problems) or "the pod is starting", failed)


def _starting_step(pod: dict[str, Any], disk: str | None = None) -> str | None:
    """What a Pending pod on a node is doing when nothing is wrong: attaching its disk (a
    claim, before any container started) or pulling its image; its init container (the
    Jupyter check) once that runs. The status does not tell a finished attach from the pull
    that follows (both wait in ContainerCreating): a pod with a disk says the attach."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName"):
        return None
    inits = status.get("initContainerStatuses") or []
    if any("running" in (s.get("state") or {}) for s in inits):
        return "running the Jupyter check"
    started = any(
        "waiting" not in (s.get("state") or {})
        for s in [*inits, *(status.get("containerStatuses") or [])]
    )
    if started:
        return None
    claims = starting_step(pod, disk)  # the disk by the user's name for it, the share
    if claims:
        return claims
    images = [c.get("image", "") for c in spec.get("containers") or []]
    return f"pulling image {images[0]}{_for_how_long(status)}" if images else None


def _for_how_long(status: dict[str, Any]) -> str:
    """` (n s)`: how long the kubelet has had the pod (its `startTime`, set when it first
    syncs it, before the pull), so a long pull shows it moving; nothing without one. The
    status line's timeline entry ignores this suffix (sql/lifecycle/progress.sql)."""
    started = status.get("startTime")
    if not started:
        return ""
    try:
        since = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f" ({max(0, int((datetime.now(UTC) - since).total_seconds()))} s)"


def needs_events(pods: list[dict[str, Any]]) -> bool:
    """Whether a pod waits in Pending, where only its events may say why."""
    return any((p.get("status") or {}).get("phase") == "Pending" for p in pods)


def _latest_warning(pod: dict[str, Any], events: Sequence[dict[str, Any]]) -> str | None:
    """The pod's most recent Warning event (this pod: its uid), in words a user can act on:
    `its disk's volume could not be attached (FailedAttachVolume: <message>)`."""
    uid = pod["metadata"].get("uid")
    own = [
        e
        for e in events
        if e.get("type") == "Warning"
        and (e.get("involvedObject") or {}).get("name") == pod["metadata"]["name"]
        and (uid is None or (e.get("involvedObject") or {}).get("uid") in (None, uid))
    ]
    if not own:
        return None
    # An attach failure is the cause the mount's timeout follows from: it wins, then the latest.
    latest = max(
        own,
        key=lambda e: (
            e.get("reason") == "FailedAttachVolume",
            str(e.get("lastTimestamp") or e.get("eventTime") or ""),
        ),
    )
    reason = str(latest.get("reason") or "Warning")
    message = str(latest.get("message") or "").strip()
    cut = len(message) > EVENT_HEAD + EVENT_TAIL + 1
    shown = f"{message[:EVENT_HEAD]}…{message[-EVENT_TAIL:]}" if cut else message
    said = f"{reason}: {shown}" if shown else reason
    if reason == "FailedMount" and (claim := claim_of_event(pod, latest)) and claim.is_share:
        return f"the {SHARE} could not be mounted ({said})"
    return f"{EVENT_PROBLEMS[reason]} ({said})" if reason in EVENT_PROBLEMS else said


def _waiting_failure(container: dict[str, Any]) -> str | None:
    """`the image could not be pulled (ErrImagePull: <the runtime's error>)`, for a container
    that waits for a reason it will not get past by waiting (WAITING_FAILURES)."""
    waiting = (container.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") not in WAITING_FAILURES:
        return None
    said = f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    return f"{WAITING_FAILURES[waiting['reason']]} ({said})"


def _image_not_found(
    container: dict[str, Any], pod: dict[str, Any], events: Sequence[dict[str, Any]]
) -> str | None:
    """The registry answered that the image does not exist (containerd's NotFound: in the
    ErrImagePull message, or while the kubelet backs off, in its `Failed to pull image`
    event about this pod), or its name is not an image name: no retry will pull it, so the
    start has failed. A pull refused for another reason (a rate limit, a registry down) may
    still heal, and waits for the ready deadline. What said so, or None."""
    waiting = (container.get("state") or {}).get("waiting") or {}
    reason = waiting.get("reason")
    if reason == "InvalidImageName":
        return f"InvalidImageName: {waiting.get('message') or ''}".rstrip(": ")
    if reason not in ("ErrImagePull", "ImagePullBackOff"):
        return None
    said = [f"{reason}: {waiting.get('message') or ''}"]
    said += [
        str(e.get("message") or "")
        for e in events
        if e.get("reason") == "Failed"
        and (e.get("involvedObject") or {}).get("name") == pod["metadata"]["name"]
    ]
    found = [text for text in said if any(m in text for m in NOT_FOUND)]
    return found[0] if found else None


def _failed_run(container: dict[str, Any]) -> dict[str, Any]:
    """The container's current state if it is a run that ended in failure, else {}."""
    ended = (container.get("state") or {}).get("terminated") or {}
    return ended if ended.get("exitCode") not in (None, 0) else {}


def _failing_again(container: dict[str, Any]) -> bool:
    """The kubelet restarted it and it failed again: waiting in CrashLoopBackOff for its
    next restart, or (for the moment before the kubelet writes that) ended non-zero with a
    restart counted."""
    waiting = (container.get("state") or {}).get("waiting") or {}
    restarted = int(container.get("restartCount") or 0)
    return waiting.get("reason") == CRASH_LOOP or bool(restarted and _failed_run(container))


def _loop(container: dict[str, Any]) -> str:
    """`(CrashLoopBackOff, restarted 2 times; last exit 1: <its message>)`."""
    last = _failed_run(container) or (container.get("lastState") or {}).get("terminated") or {}
    restarted = int(container.get("restartCount") or 0)
    times = "once" if restarted == 1 else f"{restarted} times"
    return f"({CRASH_LOOP}, restarted {times}; last {_exit(last)})"


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
