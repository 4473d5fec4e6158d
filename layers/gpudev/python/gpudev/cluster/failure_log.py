"""The last lines a pod that failed to start printed, for its reservation's timeline: what
the original CLI showed on a failed start (`kubectl logs --tail=20`), read through the
Kubernetes API (pods/log, granted in deploy/kubernetes/rbac.yaml).

Best effort: a log that cannot be read (the container never started, the grant is missing,
the API server does not answer) is said in words and logged, and never changes how the
reservation ends."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpudev.cluster.objects_client import ReservationObjects

log = logging.getLogger(__name__)
TAIL_LINES = 20
# 20 lines of a runaway log could be megabytes: the API server stops at this many bytes.
LIMIT_BYTES = 8192
# An init container waiting for an image it cannot have: the pod's containers wait behind it.
PULLING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName")
# Control characters but the tab and the newline: a NUL cannot be stored in a text column
# (psycopg refuses it, and the failure would end with a worse reason than the pod's), and
# an escape sequence would reach the owner's terminal through `gpu-dev show`.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def stored_text(text: str) -> str:
    """A log as the timeline stores it: CRLF and CR as newlines, other control characters
    as U+FFFD, at most LIMIT_BYTES characters whatever the API server sent."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("\ufffd", lines)[:LIMIT_BYTES]


def failing_container(pod: dict[str, Any]) -> str | None:
    """The container whose log says why: an init container that failed (it ran and exited
    non-zero, or was restarted) or whose image cannot be pulled (its log read then says
    so: `is waiting to start: image can't be pulled`), else the pod's first container."""
    status = pod.get("status") or {}
    for init in status.get("initContainerStatuses") or []:
        ended = ((init.get("state") or {}).get("terminated") or {}).get("exitCode")
        waiting = ((init.get("state") or {}).get("waiting") or {}).get("reason")
        if int(init.get("restartCount") or 0) or ended not in (None, 0) or waiting in PULLING:
            return str(init["name"])
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0]["name"]) if containers else None


def failure_log_tail(cluster: ReservationObjects, pods: list[dict[str, Any]]) -> str | None:
    """`last N log lines of pod P (container C):` and the lines, of the first pod that is not
    Ready; why there are none when the read is refused or finds nothing; None when no pod
    exists."""
    from kubernetes.client.exceptions import ApiException

    from gpudev.cluster.objects_client import KubernetesUnavailable

    waiting = [p for p in pods if not _ready(p)] or pods
    if not waiting:
        return None
    pod = waiting[0]
    name = pod["metadata"]["name"]
    container = failing_container(pod)
    if container is None:
        return None
    where = f"pod {name} (container {container})"
    try:
        text = cluster.log_tail(name, container, TAIL_LINES, LIMIT_BYTES)
    except ApiException as exc:
        log.warning("reading the log of %s failed: HTTP %s %s", where, exc.status, exc.reason)
        return f"no log from {where}: {_said(exc)}"
    except KubernetesUnavailable as exc:
        log.warning("reading the log of %s failed: %s", where, exc)
        return f"no log from {where}: the Kubernetes API did not answer ({exc})"
    except Exception:  # best effort: the failure ends the same way without its log
        log.exception("reading the log of %s failed", where)
        return f"no log from {where}: it could not be read"
    lines = stored_text(text).rstrip("\n")
    if not lines:
        return f"no log from {where}: it printed nothing"
    count = len(lines.splitlines())
    return f"last {count} log lines of {where}:\n{lines}"


def _said(exc: Any) -> str:
    """The API server's message (a Status body), else its HTTP status."""
    import json

    try:
        message = json.loads(exc.body or "{}").get("message")
    except (TypeError, ValueError):
        message = None
    return str(message or f"HTTP {exc.status} {exc.reason}")


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
