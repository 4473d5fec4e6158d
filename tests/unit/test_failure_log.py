"""Whose log a failed start's tail is read from: the init container that failed, else the
pod's container (the API server wants a container named when a pod has init containers)."""

from __future__ import annotations

from gpudev.cluster.failure_log import failing_container

SPEC = {"containers": [{"name": "gpu-dev"}], "initContainers": [{"name": "jupyter-check"}]}


def _pod(**status: object) -> dict[str, object]:
    return {"metadata": {"name": "p"}, "spec": SPEC, "status": status}


def test_an_init_container_that_failed_is_the_one_read():
    crashed = {"name": "jupyter-check", "restartCount": 2, "state": {"waiting": {}}}
    assert failing_container(_pod(initContainerStatuses=[crashed])) == "jupyter-check"
    ended = {"name": "jupyter-check", "state": {"terminated": {"exitCode": 3}}}
    assert failing_container(_pod(initContainerStatuses=[ended])) == "jupyter-check"


def test_otherwise_the_pods_container_is_read():
    done = {"name": "jupyter-check", "state": {"terminated": {"exitCode": 0}}}
    assert failing_container(_pod(initContainerStatuses=[done])) == "gpu-dev"
    assert failing_container(_pod()) == "gpu-dev"
    assert failing_container({"metadata": {"name": "p"}, "spec": {}, "status": {}}) is None
