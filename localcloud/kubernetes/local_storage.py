"""The kubelet's local ephemeral storage limits (its eviction manager's "local storage"
checks): a running pod is evicted, phase Failed with reason Evicted, when an emptyDir on
disk passes its `sizeLimit`, when the pod's disk usage (its containers' writes and its
emptyDirs on disk) passes the sum of its containers' `ephemeral-storage` limits, or when a
container's own writes pass its limit; checked in that order, as the kubelet does, with the
kubelet's messages. Memory-backed emptyDirs count against memory, not here.

No container writes here, so tests say what was written: `write(uid, where, bytes)`, where is
`volume:<name>` or a container's name (its writable layer and logs)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from localcloud.kubernetes.rules import quantity
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
STORAGE = "ephemeral-storage"


class LocalStorage:
    def __init__(self) -> None:
        self._used: dict[str, dict[str, int]] = {}  # pod uid -> where -> bytes

    def write(self, uid: str, where: str, size: int) -> None:
        """`size` more bytes in a pod's volume (`volume:<name>`) or container."""
        used = self._used.setdefault(uid, {})
        used[where] = used.get(where, 0) + size

    def forget_pods_but(self, uids: set[str]) -> None:
        for uid in self._used.keys() - uids:
            del self._used[uid]

    def eviction(self, pod: Obj) -> Callable[[Obj], None] | None:
        """The change that evicts a running pod past a local storage limit, or None."""
        message = self._exceeded(pod)
        if message is None:
            return None

        def evict(current: Obj) -> None:
            _evicted(current, message)

        return evict

    def _exceeded(self, pod: Obj) -> str | None:
        used = self._used.get(pod["metadata"]["uid"], {})
        if not used:
            return None
        disk_volumes = [
            v
            for v in pod["spec"].get("volumes", [])
            if "emptyDir" in v and (v["emptyDir"] or {}).get("medium") != "Memory"
        ]
        for volume in disk_volumes:
            limit = (volume["emptyDir"] or {}).get("sizeLimit")
            if limit is not None and used.get(f"volume:{volume['name']}", 0) > quantity(limit):
                return f'Usage of EmptyDir volume "{volume["name"]}" exceeds the limit "{limit}". '
        containers = pod["spec"].get("containers", [])
        limits = [_limit(c) for c in containers]
        if containers and all(limit is not None for limit in limits):
            total = sum(used.get(c["name"], 0) for c in containers) + sum(
                used.get(f"volume:{v['name']}", 0) for v in disk_volumes
            )
            if total > sum(limit for limit in limits if limit is not None):
                shown = _sum_shown([c["resources"]["limits"][STORAGE] for c in containers])
                return (
                    f"Pod ephemeral local storage usage exceeds the total limit of containers "
                    f"{shown}. "
                )
        for container, limit in zip(containers, limits, strict=True):
            if limit is not None and used.get(container["name"], 0) > limit:
                shown = container["resources"]["limits"][STORAGE]
                return (
                    f"Container {container['name']} exceeded its local ephemeral storage limit "
                    f'"{shown}". '
                )
        return None


def _limit(container: Obj) -> Decimal | None:
    value = ((container.get("resources") or {}).get("limits") or {}).get(STORAGE)
    return None if value is None else quantity(value)


def _sum_shown(values: list[str]) -> str:
    """The limits' sum as the kubelet prints a quantity: one limit as given; several in the
    largest binary unit that divides the total."""
    if len(values) == 1:
        return values[0]
    total = int(sum(quantity(v) for v in values))
    for suffix, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if total % scale == 0:
            return f"{total // scale}{suffix}"
    return str(total)


def _evicted(pod: Obj, message: str) -> None:
    """What the kubelet leaves of an evicted pod: Failed, its containers stopped, and a
    DisruptionTarget condition saying the kubelet ended it."""
    at = now()
    pod["status"].update(phase="Failed", reason="Evicted", message=message)
    conditions = [c for c in pod["status"].get("conditions", []) if c["type"] != "Ready"]
    pod["status"]["conditions"] = [
        *conditions,
        {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": at},
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "TerminationByKubelet",
            "message": message,
            "lastTransitionTime": at,
        },
    ]
    for status in pod["status"].get("containerStatuses", []):
        started = (status.get("state", {}).get("running") or {}).get("startedAt")
        status.update(
            ready=False,
            started=False,
            state={
                "terminated": {
                    "exitCode": 137,
                    "reason": "Error",
                    "startedAt": started or at,
                    "finishedAt": at,
                    "containerID": status.get("containerID", ""),
                }
            },
        )
