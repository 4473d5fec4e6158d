"""A simulated cluster over a bare store, stepped by the test (no background loop, no AWS):
nodes made from a shape, pods created in the store, `run_until` ticking the scheduler and
the kubelet until a condition holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from localcloud.kubernetes.cluster import SimulatedCluster
from localcloud.kubernetes.container_logs import ContainerLogs
from localcloud.kubernetes.container_restarts import ContainerRestarts
from localcloud.kubernetes.nodes import NodeShape, node_object
from localcloud.kubernetes.restart_back_off import BackOff
from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
NS, ZONE = "gpu-dev", "us-east-2a"
SHAPE = NodeShape("t4", "g4dn.12xlarge", 4, 48, 192)


def cluster(*nodes: str, logs: ContainerLogs | None = None) -> SimulatedCluster:
    store = ObjectStore()
    for name in nodes:
        store.create("nodes", "", node_object(name, ZONE, SHAPE))
    simulated = SimulatedCluster(
        store,
        None,
        {},
        0.0,
        0.0,
        ec2=None,
        probe_seconds=0.0,
        jupyter_images=frozenset(),
        container_logs=logs,
    )
    simulated.kubelet.restarts = ContainerRestarts(BackOff(initial_seconds=0.01, max_seconds=0.02))
    return simulated


def pod(name: str, image: str = "dev:1", gpus: int = 1, **spec: Any) -> Obj:
    container = {
        "name": "dev",
        "image": image,
        "command": ["/bin/bash", "-c", "sleep infinity"],
        "ports": [{"name": "ssh", "containerPort": 22}],
        "readinessProbe": {"tcpSocket": {"port": "ssh"}},
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
    }
    return {
        "metadata": {"name": name},
        "spec": {"restartPolicy": "OnFailure", "containers": [container], **spec},
    }


def run_until(simulated: SimulatedCluster, done: Callable[[], Any], seconds: float = 10.0) -> Any:
    """Step the cluster until `done()` is truthy (its value), or fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        simulated.step()
        value = done()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"not reached in {seconds} s")


def events_of(store: ObjectStore, name: str) -> list[Obj]:
    """The events about the object `name` in the pods' namespace, oldest first."""
    items = store.list("events", NS, field_selector=f"involvedObject.name={name}")["items"]
    return sorted(items, key=lambda e: e["metadata"]["resourceVersion"].zfill(12))


def reasons(store: ObjectStore, name: str) -> list[str]:
    return [e["reason"] for e in events_of(store, name)]
