"""A dev pod that runs its image's own entrypoint (`reserve --preserve-entrypoint`,
docs/images.md#the-images-own-entrypoint): the container has no `command` and no `args`,
so the runtime runs the image's ENTRYPOINT and CMD; no startup script, so no sshd, no `dev`
user and no SSH readiness probe. Without a probe the kubelet marks the container ready as
soon as it runs, which is when the reservation is active. The Jupyter check (an init
container running a bash script in the image) goes too: such an image may have no shell."""

from __future__ import annotations

from typing import Any


def run_own_entrypoint(spec: dict[str, Any]) -> None:
    """`spec` (a dev pod's, objects.pod) runs the image's entrypoint instead of ours. Its
    mounts (the home directory, /workspace, /dev/shm) and resources stay."""
    container = spec["containers"][0]
    for field in ("command", "args", "readinessProbe", "ports"):
        container.pop(field, None)
    spec.pop("initContainers", None)
