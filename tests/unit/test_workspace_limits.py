"""A dev pod's local disk (gpudev/cluster/workspace.py): /workspace is 100 GiB per GPU (10
GiB for a CPU pod) and the container's ephemeral-storage limit adds 20 GiB for its own
writes; the stand-in's kubelet evicts a pod past either, as the kubelet does
(localcloud/kubernetes/local_storage.py), driven on the manifests gpu-dev sends."""

from __future__ import annotations

from typing import Any

from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from localcloud.kubernetes.kubelet import _start_pod
from localcloud.kubernetes.local_storage import LocalStorage
from tests.unit.test_manifest_drift import _catalogue, _reservation

H100 = next(t for t in _catalogue() if t.gpu_type == "h100")
CPU = next(t for t in _catalogue() if t.is_cpu_only)
GIB = 2**30


def _running_pod(gpu_type: Any, gpus: int) -> dict[str, Any]:
    reservation = _reservation("alice", gpu_type, gpus, 1)
    placement = Placement(0, "i-0", "10.0.0.1", gpu_type.max_gpus)
    pod = objects.pod(reservation, gpu_type, placement, "img")
    pod["metadata"]["uid"] = "u-1"
    pod["status"] = {"phase": "Pending"}
    _start_pod(pod, node="i-0")
    return pod


def _workspace(pod: dict[str, Any]) -> str:
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "workspace"]
    return str(volume["emptyDir"]["sizeLimit"])


def _storage(pod: dict[str, Any]) -> tuple[str, str]:
    resources = pod["spec"]["containers"][0]["resources"]
    return resources["requests"]["ephemeral-storage"], resources["limits"]["ephemeral-storage"]


def test_workspace_and_the_storage_limit_follow_the_pods_gpus():
    assert (_workspace(_running_pod(H100, 1)), _storage(_running_pod(H100, 1))) == (
        "100Gi",
        ("20Gi", "120Gi"),
    )
    assert (_workspace(_running_pod(H100, 8)), _storage(_running_pod(H100, 8))) == (
        "800Gi",
        ("20Gi", "820Gi"),
    )
    assert (_workspace(_running_pod(CPU, 0)), _storage(_running_pod(CPU, 0))) == (
        "10Gi",
        ("20Gi", "30Gi"),
    )


def test_a_pod_filling_workspace_past_its_size_limit_is_evicted():
    pod, storage = _running_pod(H100, 1), LocalStorage()
    storage.write("u-1", "volume:workspace", 100 * GIB)
    assert storage.eviction(pod) is None, "at the limit: still running"
    storage.write("u-1", "volume:workspace", 1)
    evict = storage.eviction(pod)
    assert evict is not None
    evict(pod)
    assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "Evicted")
    assert pod["status"]["message"] == (
        'Usage of EmptyDir volume "workspace" exceeds the limit "100Gi". '
    )
    (state,) = [s["state"] for s in pod["status"]["containerStatuses"]]
    assert state["terminated"]["exitCode"] == 137
    ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert any(c["type"] == "DisruptionTarget" for c in pod["status"]["conditions"])


def test_workspace_and_writes_together_past_the_pods_limit_evict_it():
    pod, storage = _running_pod(H100, 1), LocalStorage()
    storage.write("u-1", "volume:workspace", 90 * GIB)
    storage.write("u-1", "gpu-dev", 30 * GIB)
    assert storage.eviction(pod) is None, "120 GiB: the limit"
    storage.write("u-1", "gpu-dev", GIB)
    evict = storage.eviction(pod)
    assert evict is not None
    evict(pod)
    assert pod["status"]["message"] == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 120Gi. "
    )


def test_the_memory_backed_shm_is_not_local_disk():
    pod, storage = _running_pod(H100, 1), LocalStorage()
    storage.write("u-1", "volume:dshm", 500 * GIB)
    assert storage.eviction(pod) is None


def test_a_pod_the_kubelet_forgot_leaves_no_usage_behind():
    storage = LocalStorage()
    storage.write("u-1", "volume:workspace", 500 * GIB)
    storage.forget_pods_but(set())
    assert storage.eviction(_running_pod(H100, 1)) is None
