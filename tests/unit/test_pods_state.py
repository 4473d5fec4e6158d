"""Readiness of a reservation's pods, and which failures are final."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.pod_readiness import pods_state


def _pod(name: str, phase: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase, **status}}


RUNNING = _pod(
    "gpu-dev-1", "Running", containerStatuses=[{"name": "gpu-dev", "ready": True, "state": {}}]
)


def test_every_expected_pod_running_and_ready_is_ready():
    assert pods_state([RUNNING], 1).ready
    assert not pods_state([RUNNING], 2).ready


def test_a_pod_refused_by_the_kubelet_is_a_final_failure_with_its_reason():
    refused = _pod(
        "gpu-dev-2",
        "Failed",
        reason="OutOfnvidia.com/gpu",
        message="Pod was rejected: Node didn't have enough resource: nvidia.com/gpu",
    )
    state = pods_state([RUNNING, refused], 2)
    assert not state.ready and state.failed
    assert state.problem is not None and "OutOfnvidia.com/gpu" in state.problem
    assert "enough resource" in state.problem


def test_a_pull_back_off_is_a_problem_but_not_final():
    pulling = _pod(
        "gpu-dev-1",
        "Pending",
        containerStatuses=[
            {
                "name": "gpu-dev",
                "ready": False,
                "state": {"waiting": {"reason": "ImagePullBackOff"}},
            }
        ],
    )
    state = pods_state([pulling], 1)
    assert not state.ready and not state.failed
    assert state.problem is not None and "could not be pulled" in state.problem
