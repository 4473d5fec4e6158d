"""The simulated cluster's tick and the stand-in's LIST of pods with 300 running
reservations, beside the same work with every internal read handed a copy.

One store with 50 nodes (8 GPUs each) and 300 reservations made by our own manifest
builders (a pod, two NodePort Services, the headless Service, the control ConfigMap, the
keys Secret and the NetworkPolicy each), stepped until every pod is Running and Ready.
Then, CPU time (process time) per call, median of `--runs` runs of `--calls` calls each:

- one tick: `SimulatedCluster.step()` (volume controllers, scheduler, kubelets), what the
  simulated cluster does every 50 ms;
- the API server's GET /api/v1/pods (all namespaces) with its JSON encoding.

"now": the simulation and the server read the stored (frozen) objects copy-free. "copied":
the same store with those reads handed copies (`list(..., frozen=False)`, a JSON-shaped
copy, cheaper than the `copy.deepcopy` the store made before: docs/decisions.md
2026-11-24), in the same process on the same data. Run: `make bench` (~10 s).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from gpudev.cluster import network, objects
from gpudev.cluster.names import Placement
from gpudev.models import GpuType, Reservation, ReservationStatus, TypeCapacity
from localcloud.kubernetes.cluster import SimulatedCluster
from localcloud.kubernetes.nodes import NodeShape, node_object
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import auth_headers, stand_in_server

NODES, RESERVATIONS, GPUS_PER_NODE = 50, 300, 8
H100 = GpuType.model_validate(
    dict.fromkeys(TypeCapacity.model_fields, 0)
    | {
        "gpu_type": "h100",
        "instance_type": "p5.48xlarge",
        "max_gpus": GPUS_PER_NODE,
        "cpus": 192,
        "memory_gb": 2048,
        "max_per_node": GPUS_PER_NODE,
        "is_active": True,
        "description": None,
        "last_availability_update": None,
        "last_availability_updated_by": None,
    }
)


class CopiedReads(ObjectStore):
    """Every LIST handed copies (`thaw`), whatever its caller asks; single GETs are not
    changed (the tick's reads are LISTs)."""

    def list(
        self,
        resource: str,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        frozen: bool = False,
    ) -> dict[str, Any]:
        return super().list(resource, namespace, label_selector, field_selector)


def cluster(store: ObjectStore) -> SimulatedCluster:
    """The simulated cluster, not started: its `step` is one tick. No volumes: EC2 is never
    called; init containers complete unrun."""
    simulated = SimulatedCluster(store, None, {}, 0.0, 1.0, ec2=None, probe_seconds=0.0)
    simulated.kubelet.trusted_scripts = frozenset()
    return simulated


def _reservation(index: int) -> Reservation:
    now = datetime.now(UTC)
    return Reservation.model_validate(
        dict.fromkeys(Reservation.model_fields)
        | {
            "reservation_id": uuid.UUID(int=random.Random(index).getrandbits(128)),
            "user_id": f"user{index % 20}",
            "status": ReservationStatus.ACTIVE,
            "gpu_type": "h100",
            "gpu_count": 1,
            "total_nodes": 1,
            "duration_hours": 8.0,
            "jupyter_enabled": True,
            "profiling": False,
            "jupyter_token": "token",
            "namespace": "gpu-dev",
            "secondary_users": [],
            "ssh_nodes": [],
            "keyless_users": [],
            "ssh_host_keys": [],
            "warnings_sent": [],
            "oom_count": 0,
            "pod_restarts": 0,
            "change_generation": 0,
            "applied_generation": 0,
            "created_at": now,
            "updated_at": now,
        }
    )


def populated(store: ObjectStore) -> ObjectStore:
    shape = NodeShape("h100", "p5.48xlarge", GPUS_PER_NODE, 192, 2048)
    names = [f"i-{n:017x}" for n in range(NODES)]
    for name in names:
        store.create("nodes", "", node_object(name, "us-east-2a", shape))
    for index in range(RESERVATIONS):
        reservation = _reservation(index)
        placement = Placement(0, names[index % NODES], "10.0.0.1", 1)
        built = [
            objects.pod(reservation, H100, placement, "pytorch/pytorch:2.5"),
            network.ssh_service(reservation),
            network.headless_service(reservation),
            objects.control_config_map(reservation, "2026-11-24T20:00:00Z", None, ""),
            objects.keys_secret(reservation, "ssh-ed25519 AAAA user", {}, {}),
            network.network_policy(reservation),
        ]
        for manifest in built:
            resource = {"NetworkPolicy": "networkpolicies"}.get(
                manifest["kind"], manifest["kind"].lower() + "s"
            )
            store.create(resource, "gpu-dev", manifest)
    tick = cluster(store).step
    for _ in range(20):  # admitted, init containers, running, probes passed
        tick()
    pods = store.list("pods", None)["items"]
    ready = [p for p in pods if _ready(p)]
    assert len(ready) == RESERVATIONS, f"{len(ready)} of {RESERVATIONS} pods ready"
    return store


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])


def list_pods(store: ObjectStore) -> Callable[[], None]:
    server = stand_in_server(store, "bench")
    headers = auth_headers("bench")

    def call() -> None:
        status, payload = server.handle("GET", "/api/v1/pods", headers, b"")
        assert status == 200, payload
        json.dumps(payload).encode()

    return call


def cpu_ms(work: Callable[[], None], runs: int, calls: int) -> float:
    """Median over runs of the CPU time per call, in ms."""
    figures = []
    for _ in range(runs):
        started = time.process_time()
        for _ in range(calls):
            work()
        figures.append((time.process_time() - started) / calls * 1000)
    return statistics.median(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    stores = {"copied": populated(CopiedReads()), "now": populated(ObjectStore())}
    print(f"{NODES} nodes, {RESERVATIONS} running reservations; CPU ms per call, median")
    print(f"{'':34}{'copied':>10}{'now':>10}")
    works = (
        ("one tick", lambda store: cluster(store).step),
        ("GET /api/v1/pods + JSON", list_pods),
    )
    for label, make in works:
        figures = [cpu_ms(make(store), args.runs, args.calls) for store in stores.values()]
        print(f"{label:34}" + "".join(f"{f:10.1f}" for f in figures))


if __name__ == "__main__":
    main()
