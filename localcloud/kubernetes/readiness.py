"""Readiness as the kubelet has it: a container with a `readinessProbe` starts Running but not
ready, and its pod is `Ready` only once the probe passes. A container without one is ready
as soon as it runs.

The simulated probe passes `probe_seconds` (real seconds, on the local cloud's compressed
clock) after the pod's containers are all running (again, after a restart), never for a
container that is not running, and never while `probes_fail` is set (fault injection:
sshd never answers) or when it names a port the container does not declare (the kubelet
cannot resolve a named port, and such a probe fails for ever). Probes are validated as the
API server does (`ValidateProbe`, the fields our manifests use).
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from localcloud.kubernetes import rules
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rules import FieldError, invalid, required
from localcloud.kubernetes.timestamps import now

if TYPE_CHECKING:  # the store validates pods with this module: no import cycle at run time
    from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
NON_NEGATIVE = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold")


def validate(container: Obj, path: str) -> list[FieldError]:
    """`spec.containers[i].readinessProbe`: exactly one handler, a valid port, no negative
    timings."""
    probe = container.get("readinessProbe")
    if probe is None:
        return []
    at = f"{path}.readinessProbe"
    handlers = [h for h in HANDLERS if probe.get(h) is not None]
    if not handlers:
        return [required(at, "must specify a handler type")]
    if len(handlers) > 1:
        return [FieldError("Forbidden", at, "may not specify more than 1 handler type", "")]
    errors = []
    for field in NON_NEGATIVE:
        value = probe.get(field, 0)
        if not isinstance(value, int) or value < 0:
            errors += invalid(f"{at}.{field}", value, ["must be greater than or equal to 0"])
    if handlers[0] in ("tcpSocket", "httpGet"):
        port = (probe[handlers[0]] or {}).get("port")
        port_at = f"{at}.{handlers[0]}.port"
        if port is None:
            errors.append(required(port_at))
        elif isinstance(port, str):
            errors += invalid(port_at, port, rules.port_name(port))
        else:
            errors += invalid(port_at, port, rules.port_number(port))
    return errors


def probed(pod: Obj) -> bool:
    return any(c.get("readinessProbe") for c in pod["spec"].get("containers", []))


def not_ready_yet(pod: Obj) -> None:
    """At start: containers with a probe are not ready, nor (then) the pod."""
    unready = [c["name"] for c in pod["spec"].get("containers", []) if c.get("readinessProbe")]
    if not unready:
        return
    for status in pod["status"].get("containerStatuses") or []:
        if status["name"] in unready:
            status["ready"] = False
    message = f"containers with unready status: [{' '.join(unready)}]"
    for condition in pod["status"].get("conditions") or []:
        if condition["type"] in ("ContainersReady", "Ready"):
            condition.update(status="False", reason="ContainersNotReady", message=message)


def _probe_can_pass(container: Obj) -> bool:
    port = ((container.get("readinessProbe") or {}).get("tcpSocket") or {}).get("port")
    if isinstance(port, str):
        return any(p.get("name") == port for p in container.get("ports") or [])
    return True


def _passed(pod: Obj) -> None:
    containers = {c["name"]: c for c in pod["spec"].get("containers", [])}
    for status in pod["status"].get("containerStatuses") or []:
        if _running(status) and _probe_can_pass(containers.get(status["name"], {})):
            status["ready"] = True
    if all(s.get("ready") for s in pod["status"].get("containerStatuses") or []):
        moment = now()
        for condition in pod["status"].get("conditions") or []:
            if condition["type"] in ("ContainersReady", "Ready"):
                condition.update(status="True", lastTransitionTime=moment)
                condition.pop("reason", None)
                condition.pop("message", None)


class ReadinessProbes:
    def __init__(self, store: ObjectStore, probe_seconds: float = 1.0):
        self._store = store
        self.probe_seconds = probe_seconds
        self.probes_fail = False  # fault injection: no probe ever passes
        self._running_since: dict[str, float] = {}  # pod uid -> when the kubelet saw it run

    def step(self, pods: list[Obj]) -> None:
        """Pass the probes of Running, not-ready pods whose time has come."""
        moment = time.monotonic()
        waiting = set()
        for pod in pods:
            meta, status = pod["metadata"], pod["status"]
            if status.get("phase") != "Running" or not probed(pod) or _ready(pod):
                continue
            if not all(_running(s) for s in status.get("containerStatuses") or []):
                continue  # exited or waiting to restart: probed again once it runs
            waiting.add(meta["uid"])
            since = self._running_since.setdefault(meta["uid"], moment)
            if self.probes_fail or moment - since < self.probe_seconds:
                continue
            with contextlib.suppress(ApiError):  # gone, or replaced under us
                self._store.update("pods", meta["namespace"], meta["name"], _passed)
        for uid in self._running_since.keys() - waiting:
            del self._running_since[uid]


def _ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod["status"].get("conditions") or []
    )


def _running(status: Obj) -> bool:
    return "running" in (status.get("state") or {})
