"""What the control plane makes of node 0's Jupyter check (cluster/jupyter_verdict.py): the
init container's termination message, read from the pod list it already makes. Only the
pod's own `jupyter=available` makes Jupyter available; everything else is a reason."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.jupyter_verdict import jupyter_verdict
from gpudev.cluster.objects import JUPYTER_CHECK
from gpudev.cluster.pod_readiness import pods_state

IMAGE = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def _pod(terminated: dict[str, Any] | None, *, checked: bool = True) -> dict[str, Any]:
    init = [{"name": JUPYTER_CHECK, "image": IMAGE}] if checked else []
    statuses = (
        [{"name": JUPYTER_CHECK, "state": {"terminated": terminated}}]
        if terminated is not None
        else []
    )
    return {
        "metadata": {"name": "gpu-dev-r-0"},
        "spec": {"initContainers": init, "containers": [{"name": "gpu-dev"}]},
        "status": {"phase": "Running", "initContainerStatuses": statuses},
    }


def test_available_only_when_the_check_said_so():
    said = _pod({"exitCode": 0, "reason": "Completed", "message": "jupyter=available\n"})
    verdict = jupyter_verdict([_pod(None, checked=False), said])  # node 1 has no check
    assert (verdict.available, verdict.reason) == (True, None)


def test_unavailable_names_the_image_and_sends_operators_to_the_dev_image():
    message = "jupyter=unavailable: no jupyter-lab on PATH (/opt/conda/bin:/usr/bin)\n"
    verdict = jupyter_verdict([_pod({"exitCode": 0, "reason": "Completed", "message": message})])
    assert not verdict.available
    assert verdict.reason == (
        f"the image {IMAGE} has no jupyter-lab (no jupyter-lab on PATH (/opt/conda/bin:/usr/bin));"
        " operators: build the dev image (deploy/dev-image) and deploy with it"
    )


def test_a_pod_that_did_not_say_is_unavailable_with_what_happened():
    cases = {
        "no check": _pod(None, checked=False),
        "not run": _pod(None),
        "not finished": _pod({}),
        "garbled": _pod({"exitCode": 0, "message": "jupyter=maybe"}),
        "failed": _pod({"exitCode": 1, "message": "jupyter=available"}),
    }
    reasons = {name: jupyter_verdict([pod]) for name, pod in cases.items()}
    assert not any(v.available for v in reasons.values())
    assert reasons["no check"].reason == "the pod did not check for Jupyter (it predates the check)"
    assert reasons["not run"].reason == "the pod's Jupyter check has not run"
    assert reasons["not finished"].reason == "the pod's Jupyter check has not finished"
    assert reasons["garbled"].reason == (
        "the pod's Jupyter check ended (exit 0) without a verdict: 'jupyter=maybe'"
    )
    assert "exit 1" in str(reasons["failed"].reason)


def test_a_failed_init_container_is_why_the_pod_is_not_ready():
    pod = _pod({"exitCode": 2, "reason": "Error", "message": "read-only file system"})
    pod["status"]["phase"] = "Pending"
    state = pods_state([pod], 1)
    assert not state.ready and not state.failed
    assert state.problem == "init container jupyter-check failed (exit 2: read-only file system)"
