"""A dev pod that runs its image's own entrypoint (`reserve --preserve-entrypoint`,
docs/images.md#the-images-own-entrypoint): the container has no `command` and no `args`,
so the runtime runs the image's ENTRYPOINT and CMD; no startup script, so no sshd, no `dev`
user and no SSH readiness probe. Without a probe the kubelet marks the container ready as
soon as it runs; the reservation is active once it has also stayed up a few seconds
(`still_settling`), so an entrypoint that exits at once fails the start. The Jupyter check (an init
container running a bash script in the image) goes too: such an image may have no shell."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def run_own_entrypoint(spec: dict[str, Any]) -> None:
    """`spec` (a dev pod's, objects.pod) runs the image's entrypoint instead of ours. Its
    mounts (the home directory, /workspace, /dev/shm) and resources stay."""
    container = spec["containers"][0]
    for field in ("command", "args", "readinessProbe", "ports"):
        container.pop(field, None)
    spec.pop("initContainers", None)


# Ready is not enough for an image's own entrypoint: with no probe, the kubelet marks the
# container ready the moment it starts, even one about to exit. Like a Deployment's
# minReadySeconds, it must have run this long without a restart (at most a quarter of the
# ready timeout, so a short timeout still leaves time to start).
SETTLE_SECONDS = 10.0


def settle_seconds(ready_timeout_seconds: float) -> float:
    return min(SETTLE_SECONDS, ready_timeout_seconds / 4)


def still_settling(pods: list[dict[str, Any]], now: float, settle: float) -> str | None:
    """Why Ready pods running their image's entrypoint do not count yet, None once every
    container has run `settle` seconds (epoch `now`) since its start, never restarted."""
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            running = (status.get("state") or {}).get("running") or {}
            started = running.get("startedAt")
            if not started or int(status.get("restartCount") or 0):
                return f"container {status.get('name')} restarted: waiting for it to stay up"
            ran = now - datetime.fromisoformat(str(started).replace("Z", "+00:00")).timestamp()
            if ran < settle:
                return f"the image's entrypoint runs: active once it has run {settle:g} s"
    return None
