"""A start that waits on a cold pull, and ones that do not: reserve → active for an image
the node has never pulled (cold), for the same image on the same node right after (warm),
and on another node that never ran it but where the image pre-puller's DaemonSet pulled it
(pre-pulled), on the local cloud with the stand-in kubelet pulling for a time by size
(localcloud/kubernetes/image_pulls.py; docs/images.md, docs/performance.md).

Each round pushes a fresh tag of a 10 GB image into moto's ECR (`gpu-dev-images/bench`, so
no node has it), reserves one T4 with `--image` it (cold: the pull is part of the start),
then a second one-GPU reservation of the same image, which the allocator packs on the same
node (warm: the kubelet finds the image there). A two-GPU reservation of it fills that node
(4 T4s); once the availability updater has listed the image (it runs every minute) and the
pre-puller's pods have run on the other T4 node, a one-GPU reservation must start there
(pre-pulled: that node never ran a dev pod of the image). The pull rate is 250 MB/s (a node pulling
from ECR in its region, decompression included), on a clock compressed 4× (an hour lasts
900 s), so a 10 GB pull is 40 s of the clock and 10 s of wall time; the figures are wall
seconds, with the cold pull's own time from the kubelet's `Pulled` event beside.

Run: `.venv/bin/python bench/image_pulls.py [ROUNDS]` (part of `make bench`; 3 rounds).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpudev.prepuller.plan import IMAGES_ANNOTATION
from localcloud.lambdas import ACCOUNT_ID
from localcloud.registry import SeededImage, seed_registry
from localcloud.stack import REGION, LocalCloud, Options
from tests.support.api import ApiClient

ROOT = Path(__file__).resolve().parent.parent
SIZE_BYTES = 10_000_000_000
RATE = 250_000_000  # bytes per second of the lifecycle's clock
SECONDS_PER_HOUR = 900.0  # 4× compressed
REGISTRY = f"{ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"


def _active(api: ApiClient, image: str, n: int, which: str, gpus: int = 1) -> tuple[str, float]:
    body = {"gpu_type": "t4", "gpu_count": gpus, "hours": 1, "github_user": "alice", "image": image}
    body["client_request_id"] = f"pull-{n}-{which}"
    reply = api.call("POST", "/v1/reservations", body=body)
    accepted = time.monotonic()
    assert reply.status == 202, reply.body
    rid = reply.body["reservation_id"]
    deadline = accepted + 300
    while time.monotonic() < deadline:
        shown = api.call("GET", f"/v1/reservations/{rid}")
        assert shown.status == 200, shown.body
        if shown.body["status"] == "active":
            return rid, time.monotonic() - accepted
        time.sleep(0.05)
    raise AssertionError(f"{which} reservation {rid[:8]} not active in 300 s")


def _prepulled_everywhere(cloud: LocalCloud, image: str) -> bool:
    """The pre-puller's DaemonSet lists `image` and its current pods run on every node."""
    assert cloud.kubernetes is not None
    daemon_set = cloud.kubernetes.store.get("daemonsets", "gpu-dev-prepuller", "gpu-dev-prepuller")
    annotations = daemon_set["spec"]["template"]["metadata"].get("annotations") or {}
    status = daemon_set.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    return (
        image in annotations.get(IMAGES_ANNOTATION, "").split()
        and status.get("observedGeneration") == daemon_set["metadata"]["generation"]
        and desired > 0
        and status.get("updatedNumberScheduled") == desired == status.get("numberReady")
    )


def _pod(cloud: LocalCloud, rid: str) -> dict[str, Any]:
    assert cloud.kubernetes is not None
    (pod,) = cloud.kubernetes.store.list("pods", "gpu-dev", f"gpu-dev/reservation={rid}")["items"]
    return dict(pod)


def _pull_seconds(cloud: LocalCloud, pod: dict[str, Any]) -> float | None:
    assert cloud.kubernetes is not None
    name = pod["metadata"]["name"]
    events = cloud.kubernetes.store.list(
        "events", "gpu-dev", field_selector=f"involvedObject.name={name}"
    )["items"]
    for event in events:
        if event["reason"] == "Pulled" and "Image size" in event["message"]:
            return float(event["message"].split(" in ", 1)[1].split("s ", 1)[0])
    return None


def one_round(cloud: LocalCloud, api: ApiClient, n: int) -> dict[str, float]:
    assert cloud.aws is not None
    seed_registry(
        cloud.aws.client("ecr"), (SeededImage("gpu-dev-images/bench", f"r{n}", SIZE_BYTES),)
    )
    image = f"{REGISTRY}/gpu-dev-images/bench:r{n}"
    cold_id, cold = _active(api, image, n, "cold")
    warm_id, warm = _active(api, image, n, "warm")
    cold_pod, warm_pod = _pod(cloud, cold_id), _pod(cloud, warm_id)
    assert cold_pod["spec"]["nodeName"] == warm_pod["spec"]["nodeName"], "not packed"
    pulled = _pull_seconds(cloud, cold_pod) or 0.0
    fill_id, _ = _active(api, image, n, "fill", gpus=2)
    assert _pod(cloud, fill_id)["spec"]["nodeName"] == cold_pod["spec"]["nodeName"], "not full"
    deadline = time.monotonic() + 300
    while not _prepulled_everywhere(cloud, cold_pod["spec"]["containers"][0]["image"]):
        assert time.monotonic() < deadline, "the pre-puller did not pull the image in 300 s"
        time.sleep(0.2)
    prepulled_id, prepulled = _active(api, image, n, "prepulled")
    prepulled_pod = _pod(cloud, prepulled_id)
    assert prepulled_pod["spec"]["nodeName"] != cold_pod["spec"]["nodeName"], "same node"
    assert _pull_seconds(cloud, prepulled_pod) is None, "the pre-pulled node pulled"
    ids = (cold_id, warm_id, fill_id, prepulled_id)
    for rid in ids:
        api.call("POST", f"/v1/reservations/{rid}/cancel")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(
        api.call("GET", f"/v1/reservations/{rid}").body["status"] != "cancelled" for rid in ids
    ):
        time.sleep(0.1)
    return {"cold": cold, "warm": warm, "pre-pulled": prepulled, "cold pull": pulled}


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    (ROOT / ".local").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-pulls-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        options = Options(
            tick_seconds=None,
            kubelet_delay_seconds=1.0,
            probe_seconds=0.0,
            termination_seconds_scale=0.02,
            seconds_per_hour=SECONDS_PER_HOUR,
            image_pull_bytes_per_second=RATE,
            api_requests_per_minute=1_000_000,  # the bench polls every 50 ms
            api_request_burst=1_000_000,
            prepull=True,  # the image pre-puller (deploy/kubernetes/prepuller/)
        )
        cloud = LocalCloud(Path(tmp), options).start()
        try:
            api = ApiClient.for_cloud(cloud)
            results = [one_round(cloud, api, n) for n in range(rounds)]
        finally:
            cloud.stop()
    scale = SECONDS_PER_HOUR / 3600
    print(
        f"a {SIZE_BYTES / 1e9:.0f} GB image at {RATE / 1e6:.0f} MB/s on a clock {1 / scale:.0f}× "
        f"compressed: {SIZE_BYTES / RATE:.0f} s of pull, {SIZE_BYTES / RATE * scale:.0f} s of "
        "wall time; reserve → active in wall seconds"
    )
    print(f"(median of {rounds}, min–max)")
    for key in ("cold", "warm", "pre-pulled", "cold pull"):
        values = [r[key] for r in results]
        print(
            f"  {key:10} {statistics.median(values):6.2f} s  ({min(values):.2f}–{max(values):.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
