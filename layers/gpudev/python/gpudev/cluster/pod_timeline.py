"""What a starting reservation's pods show has happened, as timeline entries (pure): each
pod scheduled on its node (or why the scheduler cannot place it), its image pulling, pulled
or failing to pull, its disk attached (or failing to), and the pod Ready.

The readiness check (`lifecycle/provision.py`) hands in every pod it listed, and its
Warning events when it read them, each time it answers. Everything here is read off what
the pod's status holds now (`nodeName`, a container's `imageID` or state, the Ready
condition), not off the moment it changed, so a step that began and ended between two
checks is still recorded; each entry's key makes it once however often it is seen
(`TimelineEntry`, migration 0036).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpudev.cluster.pod_claims import claim_of_event, pod_claims
from gpudev.models import TimelineEntry

# The Warning events that say a pod's disk cannot be attached or mounted.
DISK_WARNINGS = ("FailedAttachVolume", "FailedMount")
# The waiting reasons of a container whose image the kubelet could not have.
PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
SHOWN = 300  # characters of a message in an entry (the pod_log entry holds the long text)


def pod_entries(
    pods: Sequence[dict[str, Any]],
    events: Sequence[dict[str, Any]] = (),
    disk: str | None = None,
) -> list[TimelineEntry]:
    """The entries every pod's status (and Warning events) shows, pod by pod in name order,
    each pod's in the order they happen; `disk`: the user's name of the disk the pods'
    claim mounts (else the claim's name is said)."""
    found: list[TimelineEntry] = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        found += _scheduling(pod) + _disk(pod, events, disk) + _images(pod) + _readiness(pod)
    return found


def _scheduling(pod: dict[str, Any]) -> list[TimelineEntry]:
    name = pod["metadata"]["name"]
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return [
            TimelineEntry("scheduling", f"pod {name} scheduled on node {node}", f"scheduled:{name}")
        ]
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = _cut(str(condition.get("message") or condition.get("reason") or ""))
            # Each different answer once: "0/2 nodes are available: 2 Insufficient ...".
            return [
                TimelineEntry(
                    "scheduling",
                    f"pod {name} waits for a node: {message}",
                    f"unschedulable:{name}:{message}",
                )
            ]
    return []


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _started(container: dict[str, Any]) -> bool:
    """A run began: the kubelet had the image and the pod's volumes mounted."""
    state = container.get("state") or {}
    last = container.get("lastState") or {}
    return "running" in state or "terminated" in state or "terminated" in last


def _disk(
    pod: dict[str, Any], events: Sequence[dict[str, Any]], named: str | None
) -> list[TimelineEntry]:
    """Each claim by what it is (`pod_claims`): the named disk attaching, the personal share
    mounting. The disk's keys are the ones they always were; the share's end in `:share`."""
    claims = pod_claims(pod)
    if not claims:
        return []
    name = pod["metadata"]["name"]
    found = []
    for event in events:
        involved = event.get("involvedObject") or {}
        if involved.get("name") != name or event.get("reason") not in DISK_WARNINGS:
            continue
        reason = str(event["reason"])
        claim = claim_of_event(pod, event)
        what = claim.said(named) if claim else "a volume"
        found.append(
            TimelineEntry(
                "disk",
                f"{what} of pod {name} failing: {reason}: {_cut(str(event.get('message') or ''))}",
                f"attach_failed:{name}:{reason}" + (":share" if claim and claim.is_share else ""),
            )
        )
    started = any(_started(c) for c in _statuses(pod))
    waiting = bool((pod.get("spec") or {}).get("nodeName")) and not found
    for claim in claims:
        what, suffix = claim.said(named), ":share" if claim.is_share else ""
        if waiting:
            doing = f"mounting {what} in" if claim.is_share else f"attaching {what} to"
            found.append(TimelineEntry("disk", f"{doing} pod {name}", f"attaching:{name}{suffix}"))
        if started:
            done = f"{what} mounted in" if claim.is_share else f"{what} attached to"
            found.append(TimelineEntry("disk", f"{done} pod {name}", f"attached:{name}{suffix}"))
    return found


def _images(pod: dict[str, Any]) -> list[TimelineEntry]:
    """Per image (an init container and the dev container share one: pulled once)."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return []
    statuses = {c.get("name"): c for c in _statuses(pod)}
    declared = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    found: list[TimelineEntry] = []
    seen: set[str] = set()
    for container in declared:
        image = str(container.get("image") or "")
        if image in seen:
            continue
        seen.add(image)
        status = statuses.get(container.get("name")) or {}
        waiting = (status.get("state") or {}).get("waiting") or {}
        pulled = bool(status.get("imageID")) or _started(status)
        failed = waiting.get("reason") in PULL_FAILURES
        if not (pulled or failed or not pod_claims(pod)):
            continue  # the disk attaches first: no pull yet to speak of
        found.append(
            TimelineEntry(
                "image", f"pulling image {image} for pod {name}", f"pulling:{name}:{image}"
            )
        )
        if failed:
            reason = str(waiting.get("reason"))
            message = _cut(str(waiting.get("message") or ""))
            found.append(
                TimelineEntry(
                    "image",
                    f"pull error for pod {name}: {reason}: {message}".rstrip(": "),
                    f"pull_error:{name}:{image}",
                )
            )
        elif pulled:
            found.append(
                TimelineEntry(
                    "image", f"image {image} pulled for pod {name}", f"pulled:{name}:{image}"
                )
            )
    return found


def _readiness(pod: dict[str, Any]) -> list[TimelineEntry]:
    name = pod["metadata"]["name"]
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return [TimelineEntry("readiness", f"pod {name} ready: sshd answers", f"ready:{name}")]
    return []


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
