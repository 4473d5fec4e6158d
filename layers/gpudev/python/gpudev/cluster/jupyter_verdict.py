"""What node 0's Jupyter check (its init container, objects.jupyter_check) said about the
pod's image, read from the pod the control plane lists anyway: the init container's
termination message, `jupyter=available` or `jupyter=unavailable: <detail>`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpudev.cluster.objects import JUPYTER_CHECK

AVAILABLE = "jupyter=available"
UNAVAILABLE = "jupyter=unavailable:"
SHOWN_DETAIL = 300  # characters of the check's own words kept in the reason


@dataclass(frozen=True)
class JupyterVerdict:
    available: bool
    reason: str | None = None  # why not, for the user and for the operators


def jupyter_verdict(pods: list[dict[str, Any]]) -> JupyterVerdict:
    """The verdict of the pod that ran the check (node 0's). A pod that has not said (no
    check, not finished, an unreadable message) is unavailable, with that as the reason:
    a URL is shown only when the pod said Jupyter is there."""
    for pod in pods:
        spec = {c.get("name"): c for c in pod.get("spec", {}).get("initContainers") or []}
        if JUPYTER_CHECK not in spec:
            continue
        image = spec[JUPYTER_CHECK].get("image", "")
        for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
            if status.get("name") == JUPYTER_CHECK:
                return _read(((status.get("state") or {}).get("terminated")) or {}, image)
        return JupyterVerdict(False, "the pod's Jupyter check has not run")
    return JupyterVerdict(False, "the pod did not check for Jupyter (it predates the check)")


def _read(terminated: dict[str, Any], image: str) -> JupyterVerdict:
    if not terminated:
        return JupyterVerdict(False, "the pod's Jupyter check has not finished")
    said = (terminated.get("message") or "").strip().splitlines()
    line = said[-1].strip() if said else ""
    if terminated.get("exitCode") == 0 and line == AVAILABLE:
        return JupyterVerdict(True)
    if line.startswith(UNAVAILABLE):
        detail = line[len(UNAVAILABLE) :].strip()[:SHOWN_DETAIL]
        return JupyterVerdict(
            False,
            f"the image {image} has no jupyter-lab ({detail}); operators: build the dev image "
            "(deploy/dev-image) and deploy with it",
        )
    return JupyterVerdict(
        False,
        f"the pod's Jupyter check ended (exit {terminated.get('exitCode')}) without a verdict: "
        f"{line[:SHOWN_DETAIL]!r}",
    )
