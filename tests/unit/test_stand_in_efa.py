"""The stand-in counts EFA interfaces as Kubernetes counts an extended resource
(localcloud/kubernetes/efa.py): a pod bound to a node short of them is rejected by the
kubelet (OutOfvpc.amazonaws.com/efa), a pod to schedule passes over such a node
(Insufficient vpc.amazonaws.com/efa), and an EFA node shape advertises them with its
placement group's label."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.cluster import SimulatedCluster
from localcloud.kubernetes.nodes import NodeShape, node_object
from localcloud.kubernetes.store import ObjectStore
from tests.support.stand_in_cluster import NS, ZONE, events_of, pod, run_until

EFA = "vpc.amazonaws.com/efa"
P5 = NodeShape("h100", "p5.48xlarge", 8, 192, 2048, efa=32)


def _cluster(*names: str) -> SimulatedCluster:
    store = ObjectStore()
    for name in names:
        store.create("nodes", "", node_object(name, ZONE, P5, "gpudev-h100-efa"))
    return SimulatedCluster(
        store, None, {}, 0.0, 0.0, ec2=None, probe_seconds=0.0, jupyter_images=frozenset()
    )


def _efa_pod(name: str, efa: int, gpus: int = 8, **spec: Any) -> dict[str, Any]:
    manifest = pod(name, gpus=gpus, **spec)
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["limits"][EFA] = str(efa)
    resources["requests"] = dict(resources["limits"])
    return manifest


def _phase(store: ObjectStore, name: str) -> str:
    return str(store.get("pods", NS, name)["status"].get("phase"))


def test_an_efa_node_advertises_its_interfaces_and_its_placement_group():
    node = node_object("i-1", ZONE, P5, "gpudev-h100-efa")
    assert node["status"]["allocatable"][EFA] == "32"
    assert node["metadata"]["labels"]["gpu-dev/placement-group"] == "gpudev-h100-efa"
    plain = node_object("i-2", ZONE, NodeShape("t4", "g4dn.12xlarge", 4, 48, 192))
    assert EFA not in plain["status"]["allocatable"]
    assert "gpu-dev/placement-group" not in plain["metadata"]["labels"]


def test_the_kubelet_rejects_a_pod_asking_more_efa_than_its_node_has():
    simulated = _cluster("node-a")
    store = simulated.store
    store.create("pods", NS, _efa_pod("too-many", 33, nodeName="node-a"))

    run_until(simulated, lambda: _phase(store, "too-many") == "Failed")

    status = store.get("pods", NS, "too-many")["status"]
    assert status["reason"] == f"OutOf{EFA}"
    assert "requested: 33, used: 0, capacity: 32" in status["message"]


def test_the_kubelet_admits_a_pod_asking_every_interface_and_counts_them():
    simulated = _cluster("node-a")
    store = simulated.store
    store.create("pods", NS, _efa_pod("whole", 32, nodeName="node-a"))
    run_until(simulated, lambda: _phase(store, "whole") == "Running")
    # no GPU left to want: the EFA interfaces are what it lacks
    store.create("pods", NS, _efa_pod("second", 1, gpus=0, nodeName="node-a"))

    run_until(simulated, lambda: _phase(store, "second") == "Failed")

    assert store.get("pods", NS, "second")["status"]["reason"] == f"OutOf{EFA}"


def test_the_scheduler_passes_over_nodes_short_of_efa():
    simulated = _cluster("node-a")
    store = simulated.store
    store.create("pods", NS, _efa_pod("unplaceable", 64))

    warning = run_until(
        simulated,
        lambda: [e for e in events_of(store, "unplaceable") if e["reason"] == "FailedScheduling"],
    )[0]

    assert f"1 Insufficient {EFA}" in warning["message"]
    assert not store.get("pods", NS, "unplaceable")["spec"].get("nodeName")
