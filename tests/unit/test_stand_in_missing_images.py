"""An image the registry does not have, on the stand-in's kubelet (image_pulls.py): the
container waits in ErrImagePull with containerd's NotFound error, then in ImagePullBackOff
while the kubelet backs off, with the events `kubectl describe pod` shows on EKS; an init
container's missing image holds the pod's containers in PodInitializing; pods/log refuses
with the kubelet's words."""

from __future__ import annotations

from typing import Any

import pytest

from localcloud.kubernetes.container_logs import ContainerLogs, LogOptions
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore
from tests.support.stand_in_cluster import NS, cluster, events_of, pod, run_until

MISSING = "registry.example/team/dev:nope"


def not_found_error(image: str) -> str:
    """containerd's words for an image the registry does not have."""
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
        f'failed to resolve reference "{image}": {image}: not found'
    )


def _waiting(store: ObjectStore, name: str, statuses: str = "containerStatuses") -> dict[str, Any]:
    for status in store.get("pods", NS, name)["status"].get(statuses) or []:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting:
            return {"container": status["name"], **waiting}
    return {}


def test_a_missing_image_is_err_image_pull_then_back_off_with_the_kubelets_events():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    simulated.kubelet.missing_images = frozenset({MISSING})
    store = simulated.store
    store.create("pods", NS, pod("dev", MISSING))
    first = run_until(simulated, lambda: _waiting(store, "dev"))
    assert first == {
        "container": "dev",
        "reason": "ErrImagePull",
        "message": not_found_error(MISSING),
    }
    assert "code = NotFound" in first["message"] and first["message"].endswith(": not found")
    backing_off = run_until(
        simulated, lambda: _waiting(store, "dev").get("reason") == "ImagePullBackOff"
    )
    assert backing_off
    found = store.get("pods", NS, "dev")
    assert found["status"]["phase"] == "Pending"
    assert _waiting(store, "dev")["message"] == f'Back-off pulling image "{MISSING}"'
    said = [(e["type"], e["reason"], e["message"]) for e in events_of(store, "dev")]
    assert ("Normal", "Pulling", f'Pulling image "{MISSING}"') in said
    assert ("Warning", "Failed", f'Failed to pull image "{MISSING}": {first["message"]}') in said
    assert ("Warning", "Failed", "Error: ErrImagePull") in said
    assert ("Normal", "BackOff", f'Back-off pulling image "{MISSING}"') in said
    assert ("Warning", "Failed", "Error: ImagePullBackOff") in said
    # Backing off: the next pull is 10 s away, so steps now change nothing.
    for _ in range(5):
        simulated.step()
    assert _waiting(store, "dev")["reason"] == "ImagePullBackOff"
    with pytest.raises(ApiError) as refused:
        logs.read(store.get("pods", NS, "dev"), LogOptions.from_query("dev", {}))
    assert refused.value.message == (
        'container "dev" in pod "dev" is waiting to start: trying and failing to pull image'
    )


def test_an_init_containers_missing_image_holds_the_pods_containers_in_pod_initializing():
    simulated = cluster("node-a")
    simulated.kubelet.missing_images = frozenset({MISSING})
    store = simulated.store
    manifest = pod("dev", MISSING)
    manifest["spec"]["initContainers"] = [
        {"name": "check", "image": MISSING, "command": ["/bin/sh", "-c", "true"]}
    ]
    store.create("pods", NS, manifest)
    run_until(simulated, lambda: _waiting(store, "dev", "initContainerStatuses"))
    assert _waiting(store, "dev", "initContainerStatuses")["reason"] == "ErrImagePull"
    assert _waiting(store, "dev") == {"container": "dev", "reason": "PodInitializing"}
    conditions = {
        c["type"]: (c["status"], c.get("reason"))
        for c in store.get("pods", NS, "dev")["status"]["conditions"]
    }
    assert conditions == {
        "PodScheduled": ("True", None),
        "Initialized": ("False", "ContainersNotInitialized"),
        "ContainersReady": ("False", "ContainersNotReady"),
        "Ready": ("False", "ContainersNotReady"),
    }


def test_an_image_the_registry_has_runs_as_before():
    simulated = cluster("node-a")
    simulated.kubelet.missing_images = frozenset({MISSING})
    store = simulated.store
    store.create("pods", NS, pod("dev", "dev:1"))
    run_until(simulated, lambda: store.get("pods", NS, "dev")["status"].get("phase") == "Running")
