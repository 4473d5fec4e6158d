"""The kubelet's restart back-off for a failed container, init or not (kubernetes.io "Pod
lifecycle", "Container restarts"; `doBackOff` in kuberuntime_manager.go): after its first
failure the container is restarted at once; after each later one it waits, 10 s doubling,
capped at 5 min (here `BackOff`, compressed for tests), its status waiting with reason
CrashLoopBackOff and the message `back-off 10s restarting failed container=NAME
pod=POD_NAMESPACE(UID)`. A container that ran longer than twice the cap (10 min there)
since its last restart finds its back-off expired (`hasExpired` in client-go's
flowcontrol): it is restarted at once, and its back-off starts again from the first delay.
The delays are kept per pod and container, and forgotten with the pod."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class BackOff:
    """The kubelet's restart back-off (10 s and 300 s there), scaled down by 50."""

    initial_seconds: float = 0.2
    max_seconds: float = 6.0


KUBELET_BACK_OFF = BackOff()


class RestartBackOff:
    def __init__(
        self, back_off: BackOff = KUBELET_BACK_OFF, clock: Callable[[], float] = time.monotonic
    ):
        self.back_off = back_off
        self._clock = clock  # tests step it instead of sleeping
        # (pod uid, container) -> the back-off its next failure waits, once it failed
        self._next_delay: dict[tuple[str, str], float] = {}
        self._restart_at: dict[tuple[str, str], float] = {}  # when a waiting one restarts
        # when its back-off last moved: its last restart (client-go's `lastUpdate`)
        self._updated: dict[tuple[str, str], float] = {}

    def forget_pods_but(self, uids: set[str]) -> None:
        for seen in (self._next_delay, self._restart_at, self._updated):
            for key in [k for k in seen if k[0] not in uids]:
                del seen[key]

    def after_failure(self, pod: Obj, name: str) -> str | None:
        """A container of the pod has just failed: None if it is restarted at once (its first
        failure, or one after a run longer than twice the cap since its last restart), else
        the CrashLoopBackOff message of the wait now scheduled."""
        key = (pod["metadata"]["uid"], name)
        moment = self._clock()
        delay = self._next_delay.get(key)
        if delay is not None and moment - self._updated[key] > 2 * self.back_off.max_seconds:
            delay = None  # it ran long enough: its back-off expired
        self._next_delay[key] = (
            self.back_off.initial_seconds
            if delay is None
            else min(delay * 2, self.back_off.max_seconds)
        )
        if delay is None:
            self._updated[key] = moment
            return None
        self._restart_at[key] = self._updated[key] = moment + delay
        meta = pod["metadata"]
        return (
            f"back-off {duration(delay)} restarting failed container={name} "
            f"pod={meta['name']}_{meta.get('namespace', '')}({meta['uid']})"
        )

    def due(self, pod: Obj, name: str) -> bool:
        """Whether a waiting container's back-off has passed (at once if none is known)."""
        key = (pod["metadata"]["uid"], name)
        return self._clock() >= self._restart_at.get(key, 0.0)


def duration(seconds: float) -> str:
    """As Go prints a time.Duration: 10s, 2m40s, 200ms."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:g}s"
    return f"{int(seconds // 60)}m{seconds % 60:g}s"
