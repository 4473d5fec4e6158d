"""What the kubelet does with an init container that failed (kubernetes.io, "Init
containers" and "Pod lifecycle"): with the pod's restartPolicy Never the pod is Failed; with
Always or OnFailure it restarts that init container until it succeeds: at once after its
first failure, then after an exponential back-off (10 s doubling, capped at 5 min, in the
real kubelet; `BackOff`, compressed for tests, here), during which its status waits with
reason CrashLoopBackOff (`back-off 10s restarting failed container=…`), `lastState` is the
failed run and `restartCount` counts the restarts. The pod stays Pending, `Initialized`
False, until every init container completed (`kubectl` shows `Init:CrashLoopBackOff`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes.init_containers import CRASH_LOOP
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
Change = Callable[[Obj], None]


@dataclass(frozen=True)
class BackOff:
    """The kubelet's restart back-off (10 s and 300 s there), scaled down by 50."""

    initial_seconds: float = 0.2
    max_seconds: float = 6.0


class InitContainerRestarts:
    def __init__(self, back_off: BackOff = BackOff()):
        self.back_off = back_off
        # (pod uid, container) -> the back-off its next failure waits, once it failed
        self._next_delay: dict[tuple[str, str], float] = {}
        self._restart_at: dict[tuple[str, str], float] = {}  # when a waiting one restarts

    def forget_pods_but(self, uids: set[str]) -> None:
        for seen in (self._next_delay, self._restart_at):
            for key in [k for k in seen if k[0] not in uids]:
                del seen[key]

    def after_failure(self, pod: Obj) -> Change:
        """The status change for a pod whose init container has just failed."""
        if pod["spec"].get("restartPolicy") == "Never":
            return _pod_failed
        name = _failed_container(pod)
        key = (pod["metadata"]["uid"], name)
        delay = self._next_delay.get(key)
        self._next_delay[key] = (
            self.back_off.initial_seconds
            if delay is None
            else min(delay * 2, self.back_off.max_seconds)
        )
        if delay is None:  # the first failure: restarted at once
            return _restart
        self._restart_at[key] = time.monotonic() + delay
        meta = pod["metadata"]
        message = (
            f"back-off {_duration(delay)} restarting failed container={name} "
            f"pod={meta['name']}_{meta.get('namespace', '')}({meta['uid']})"
        )

        def wait(obj: Obj) -> None:
            for status in obj["status"].get("initContainerStatuses") or []:
                if status["name"] == name:
                    status.update(
                        lastState={"terminated": status["state"]["terminated"]},
                        state={"waiting": {"reason": CRASH_LOOP, "message": message}},
                        started=False,
                    )

        return wait

    def restart_due(self, pod: Obj) -> Change | None:
        """The restart of a waiting init container once its back-off has passed."""
        for status in pod["status"].get("initContainerStatuses") or []:
            if ((status.get("state") or {}).get("waiting") or {}).get("reason") == CRASH_LOOP:
                key = (pod["metadata"]["uid"], status["name"])
                if time.monotonic() >= self._restart_at.get(key, 0.0):
                    return _restart
        return None


def _failed_container(pod: Obj) -> str:
    return next(
        str(s["name"])
        for s in pod["status"]["initContainerStatuses"]
        if ((s.get("state") or {}).get("terminated") or {}).get("exitCode") not in (None, 0)
    )


def _restart(pod: Obj) -> None:
    """The failed (or waiting) init container runs again; the ones after it still wait."""
    for status in pod["status"].get("initContainerStatuses") or []:
        state = status.get("state") or {}
        ended = (state.get("terminated") or {}).get("exitCode") not in (None, 0)
        if ended or (state.get("waiting") or {}).get("reason") == CRASH_LOOP:
            if ended:
                status["lastState"] = {"terminated": state["terminated"]}
            status.update(
                state={"running": {"startedAt": now()}},
                started=True,
                restartCount=status.get("restartCount", 0) + 1,
            )
            return


def _pod_failed(pod: Obj) -> None:
    """restartPolicy Never: the pod ends Failed, its init container's status kept."""
    pod["status"]["phase"] = "Failed"


def _duration(seconds: float) -> str:
    """As Go prints a time.Duration: 10s, 2m40s, 200ms."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:g}s"
    return f"{int(seconds // 60)}m{seconds % 60:g}s"
