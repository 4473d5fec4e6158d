"""Pulling an image the registry does not have, as a kubelet with containerd does: the
container waits in `ErrImagePull` (containerd's NotFound error as its message), then in
`ImagePullBackOff` while the kubelet backs off (10 s, doubled each time, at most 300 s, as
the kubelet's image back-off), then tries again: `ErrImagePull` once more, and so on. The
pod stays Pending and never runs.

The kubelet pulls a container's image as it starts the container: init containers first,
one at a time, so a missing image of the first init container holds every other container
in `PodInitializing`; a missing image of a container (once the init containers completed)
leaves the other containers waiting in `ContainerCreating` (the stand-in starts a pod's
containers together, so it does not run some while one cannot start).

Events, as `kubectl describe pod` shows them on EKS: `Pulling`, `Failed` (the pull's error),
`Failed` (`Error: ErrImagePull`); then `BackOff` (`Back-off pulling image ...`) and `Failed`
(`Error: ImagePullBackOff`).

Which images are missing is the kubelet's `missing_images` (tests say, as they would push
or not push an image to a registry)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
BACKOFF_SECONDS, BACKOFF_CAP_SECONDS = 10.0, 300.0


@dataclass(frozen=True)
class MissingImage:
    list_name: str  # "initContainers" or "containers"
    container: str
    image: str


def reference(image: str) -> str:
    """The image's full reference as containerd names it (docker.io/library/ for Docker Hub's
    official images, :latest when no tag or digest)."""
    name = image
    first = name.split("/", 1)[0]
    if "/" not in name or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"
    if "@" not in name and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name


def not_found_error(image: str) -> str:
    full = reference(image)
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
        f'failed to resolve reference "{full}": {full}: not found'
    )


def first_missing(pod: Obj, missing: frozenset[str]) -> MissingImage | None:
    """The container whose image the kubelet would pull next and cannot: the first init
    container that has not completed, else any container."""
    if not missing:
        return None
    spec, status = pod["spec"], pod.get("status") or {}
    completed = {
        s["name"]
        for s in status.get("initContainerStatuses") or []
        if ((s.get("state") or {}).get("terminated") or {}).get("exitCode") == 0
    }
    for container in spec.get("initContainers") or []:
        if container["name"] in completed:
            continue
        image = container.get("image", "")
        return (
            MissingImage("initContainers", container["name"], image) if image in missing else None
        )
    for container in spec.get("containers") or []:
        if container.get("image", "") in missing:
            return MissingImage("containers", container["name"], container["image"])
    return None


class ImagePulls:
    """Each pod's failing pull: when the kubelet tries again (by pod uid)."""

    def __init__(self) -> None:
        self._retry_at: dict[str, tuple[float, float]] = {}  # uid -> (when, next back-off)

    def forget_pods_but(self, uids: set[str]) -> None:
        for uid in self._retry_at.keys() - uids:
            del self._retry_at[uid]

    def step(self, pod: Obj, missing: MissingImage) -> tuple[str, str] | None:
        """The waiting reason and message to write now (None: nothing changes yet)."""
        uid = pod["metadata"]["uid"]
        current = _waiting_reason(pod, missing)
        moment = time.monotonic()
        if current == "ErrImagePull":
            _, backoff = self._retry_at.get(uid, (0.0, BACKOFF_SECONDS))
            self._retry_at[uid] = (moment + backoff, min(backoff * 2, BACKOFF_CAP_SECONDS))
            return "ImagePullBackOff", f'Back-off pulling image "{missing.image}"'
        if current == "ImagePullBackOff":
            when, _ = self._retry_at.get(uid, (0.0, BACKOFF_SECONDS))
            if moment < when:
                return None
        return "ErrImagePull", not_found_error(missing.image)


def _waiting_reason(pod: Obj, missing: MissingImage) -> str | None:
    statuses = (
        "initContainerStatuses" if missing.list_name == "initContainers" else "containerStatuses"
    )
    for status in (pod.get("status") or {}).get(statuses) or []:
        if status.get("name") == missing.container:
            return ((status.get("state") or {}).get("waiting") or {}).get("reason")
    return None


def pull_failing(pod: Obj, missing: MissingImage, reason: str, message: str) -> None:
    """The pod's status while `missing`'s image cannot be pulled: that container waits with
    `reason`, the others wait as the kubelet leaves them (PodInitializing behind an init
    container, ContainerCreating beside a container); Pending, not Initialized or Ready."""
    spec, status = pod["spec"], pod["status"]
    moment = now()
    behind_init = missing.list_name == "initContainers"

    def waiting(container: Obj, list_name: str) -> Obj:
        if container["name"] == missing.container and list_name == missing.list_name:
            return {"waiting": {"reason": reason, "message": message}}
        if list_name == "initContainers" or behind_init:
            return {"waiting": {"reason": "PodInitializing"}}
        return {"waiting": {"reason": "ContainerCreating"}}

    def statuses(list_name: str) -> list[Obj]:
        earlier = {s["name"]: s for s in status.get(_status_list(list_name)) or []}
        found = []
        for container in spec.get(list_name) or []:
            kept = earlier.get(container["name"])
            done = ((kept or {}).get("state") or {}).get("terminated", {}).get("exitCode") == 0
            found.append(
                kept
                if kept and done
                else {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "restartCount": (kept or {}).get("restartCount", 0),
                    "started": False,
                    "state": waiting(container, list_name),
                }
            )
        return found

    if spec.get("initContainers"):
        status["initContainerStatuses"] = statuses("initContainers")
    status["containerStatuses"] = statuses("containers")
    status["phase"] = "Pending"
    status.setdefault("startTime", moment)
    unready = " ".join(c["name"] for c in spec.get("containers") or [])
    conditions = [_condition("PodScheduled", moment)]
    if behind_init:
        incomplete = f"containers with incomplete status: [{missing.container}]"
        conditions.append(_condition("Initialized", moment, "ContainersNotInitialized", incomplete))
    else:
        conditions.append(_condition("Initialized", moment))
    for kind in ("ContainersReady", "Ready"):
        message = f"containers with unready status: [{unready}]"
        conditions.append(_condition(kind, moment, "ContainersNotReady", message))
    # A condition that keeps its status keeps the moment it took it.
    earlier = {c.get("type"): c for c in status.get("conditions") or []}
    for condition in conditions:
        before = earlier.get(condition["type"]) or {}
        if before.get("status") == condition["status"] and before.get("lastTransitionTime"):
            condition["lastTransitionTime"] = before["lastTransitionTime"]
    status["conditions"] = conditions


def _condition(kind: str, moment: str, reason: str | None = None, message: str = "") -> Obj:
    """True without a reason; False with the kubelet's reason and message."""
    if reason is None:
        return {"type": kind, "status": "True", "lastTransitionTime": moment}
    return {
        "type": kind,
        "status": "False",
        "lastTransitionTime": moment,
        "reason": reason,
        "message": message,
    }


def _status_list(list_name: str) -> str:
    return "initContainerStatuses" if list_name == "initContainers" else "containerStatuses"
