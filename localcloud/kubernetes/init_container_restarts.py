"""What the kubelet does with an init container that failed (kubernetes.io, "Init
containers" and "Pod lifecycle"): with the pod's restartPolicy Never the pod is Failed; with
Always or OnFailure it restarts that init container until it succeeds: at once after its
first failure, then after an exponential back-off (10 s doubling, capped at 5 min, in the
real kubelet; `restart_back_off.py`, compressed for tests, here), during which its status waits with
reason CrashLoopBackOff (`back-off 10s restarting failed container=…`), `lastState` is the
failed run and `restartCount` counts the restarts. The pod stays Pending, `Initialized`
False, until every init container completed (`kubectl` shows `Init:CrashLoopBackOff`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from localcloud.kubernetes.init_containers import CRASH_LOOP
from localcloud.kubernetes.restart_back_off import KUBELET_BACK_OFF, BackOff, RestartBackOff
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
Change = Callable[[Obj], None]


class InitContainerRestarts:
    def __init__(self, back_off: BackOff = KUBELET_BACK_OFF):
        self.restarts = RestartBackOff(back_off)

    def forget_pods_but(self, uids: set[str]) -> None:
        self.restarts.forget_pods_but(uids)

    def after_failure(self, pod: Obj) -> Change:
        """The status change for a pod whose init container has just failed."""
        if pod["spec"].get("restartPolicy") == "Never":
            return _pod_failed
        name = _failed_container(pod)
        message = self.restarts.after_failure(pod, name)
        if message is None:  # the first failure: restarted at once
            return _restart

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
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == CRASH_LOOP and self.restarts.due(pod, status["name"]):
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
