"""Many reservations at once through the whole stack: 36 reservations across t4, h100 and
cpu-x86 (single and multinode, 6 to 9 clock minutes: 3.6 to 5.4 s) are submitted from two
users in parallel, a third of them cancelled at random moments, while a monitor samples the
cluster. Throughout: no node runs pods asking for more GPUs than it has; at the end every
reservation has ended (expired or cancelled) and nothing labelled with any of them is left."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tests.lifecycle.helpers import assert_nothing_left, cancel, reserve, wait_for_status

SHAPES = [("t4", 1), ("t4", 2), ("t4", 4), ("h100", 4), ("h100", 8), ("h100", 16), ("cpu-x86", 0)]


def _overbooked(cloud) -> list[str]:
    store = cloud.kubernetes.store
    capacity = {
        n["metadata"]["name"]: int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
        for n in store.list("nodes", None)["items"]
    }
    used: dict[str, int] = {}
    for pod in store.list("pods", "gpu-dev")["items"]:
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue  # holds nothing (a pod the kubelet refused ends its reservation: failed)
        node = pod["spec"].get("nodeName")
        limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
        used[node] = used.get(node, 0) + int(limits.get("nvidia.com/gpu", 0))
    return [node for node, gpus in used.items() if gpus > capacity.get(node, 0)]


def test_concurrent_reservations_and_cancels_never_overbook_and_leave_nothing(api, local_cloud):
    rng = random.Random(11)
    problems: list[str] = []
    done = threading.Event()

    def monitor() -> None:
        while not done.is_set():
            problems.extend(_overbooked(local_cloud))
            time.sleep(0.1)

    watcher = threading.Thread(target=monitor)
    watcher.start()
    plan = [
        (rng.choice(["alice", "bob"]), *rng.choice(SHAPES), rng.choice([0.1, 0.125, 0.15]))
        for _ in range(36)
    ]

    def submit(item: tuple[str, str, int, float]) -> tuple[str, str]:
        user, gpu_type, gpus, hours = item
        reservation = reserve(api, user, gpu_type=gpu_type, gpu_count=gpus, hours=hours)
        return reservation["reservation_id"], user

    with ThreadPoolExecutor(max_workers=6) as pool:
        submitted = list(pool.map(submit, plan))
    for reservation_id, user in rng.sample(submitted, 12):
        time.sleep(rng.random() * 0.5)
        cancel(api, reservation_id, profile=user)
    try:
        endings = [
            wait_for_status(api, rid, ("expired", "cancelled", "failed"), timeout=120, profile=user)
            for rid, user in submitted
        ]
    finally:
        done.set()
        watcher.join()
    assert problems == []
    failed = [
        (e["reservation_id"], e.get("failure_reason")) for e in endings if e["status"] == "failed"
    ]
    assert {e["status"] for e in endings} <= {"expired", "cancelled"}, failed
    assert sum(e["status"] == "expired" for e in endings) >= 12
    for reservation_id, _ in submitted:
        assert_nothing_left(local_cloud, reservation_id)
