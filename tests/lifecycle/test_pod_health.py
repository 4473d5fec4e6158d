"""Pod health, watched, on the whole local deployment: what a kubelet reports about an active
reservation's pod reaches `show` within one availability updater run, and a pod that is gone
ends the reservation with the reason and lets the queue move; so does a node that is removed
(its instance terminated), whose Auto Scaling replacement then serves the queue."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import (
    assert_nothing_left,
    h100s_full_and_one_queued,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for

EVENT = json.loads(
    (
        Path(__file__).resolve().parents[2] / "events" / "availability_updater" / "scheduled.json"
    ).read_text()
)


def update_availability(cloud: LocalCloud) -> dict[str, Any]:
    """One updater run, as EventBridge would invoke it."""
    invocation = cloud.lambdas.invoke("AvailabilityUpdater", EVENT)
    assert not invocation.errored, invocation.payload
    return dict(invocation.payload)


def the_pod(cloud: LocalCloud, reservation_id: str) -> dict[str, Any]:
    [pod] = objects_of(cloud, reservation_id)["pods"]
    return pod


def wait_for_control(cloud: LocalCloud, reservation_id: str, key: str, timeout: float = 10) -> str:
    """A key of the reservation's control ConfigMap once it is set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        [config_map] = objects_of(cloud, reservation_id)["configmaps"]
        if value := (config_map.get("data") or {}).get(key):
            return str(value)
        time.sleep(0.1)
    raise AssertionError(f"{key} not in the ConfigMap after {timeout}s")


def test_an_oom_kill_patched_onto_an_active_pod_shows_within_one_run(api, local_cloud):
    rid = reserve(api, hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    pod = the_pod(local_cloud, rid)
    container = pod["spec"]["containers"][0]["name"]
    # What the kubelet writes after the container was OOM-killed and restarted.
    status = {
        "status": {
            "containerStatuses": [
                {
                    "name": container,
                    "image": pod["spec"]["containers"][0]["image"],
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 1,
                    "state": {"running": {"startedAt": "2026-11-23T12:00:05Z"}},
                    "lastState": {
                        "terminated": {
                            "reason": "OOMKilled",
                            "exitCode": 137,
                            "startedAt": "2026-11-23T11:00:00Z",
                            "finishedAt": "2026-11-23T12:00:00Z",
                        }
                    },
                }
            ]
        }
    }
    assert local_cloud.kubernetes is not None and local_cloud.ticker is not None
    # Only the run below may see the change: a ticked run (every second here) overlapping
    # the patch would record it first and leave this one nothing to find.
    local_cloud.ticker.pause("AvailabilityUpdater")
    meta = pod["metadata"]
    local_cloud.kubernetes.store.patch(
        "pods", meta["namespace"], meta["name"], status, subresource="status"
    )

    run = update_availability(local_cloud)
    local_cloud.ticker.paused.discard("AvailabilityUpdater")

    assert run["statistics"]["health_findings"] >= 1
    seen = show(api, rid)
    assert seen["status"] == "active"
    assert seen["oom_count"] == 1
    assert seen["last_oom_at"].startswith("2026-11-23T12:00:00")
    assert "OOM-killed 1 time(s)" in seen["health_warning"]
    # The changed warning woke the execution: its checkpoint put it in the pod's ConfigMap,
    # which the pod's control loop shows in the prompt banner (startup.sh).
    assert run["statistics"]["warnings_woken"] == 1
    assert wait_for_control(local_cloud, rid, "health_warning") == seen["health_warning"]
    update_availability(local_cloud)
    assert show(api, rid)["oom_count"] == 1, "the same kill is counted once"
    # The warning is in the timeline once (kind health), however many runs saw it.
    timeline = api.call("GET", f"/v1/reservations/{rid}/events").body["events"]
    health = [e["detail"] for e in timeline if e["kind"] == "health"]
    assert health == [f"warning: {seen['health_warning']}"], timeline
    # So are the kill and the restart, each once (their keys: the kill's time, the count).
    kills = [e["detail"] for e in timeline if e["kind"] == "oom"]
    assert kills == [
        "a container was OOM-killed (out of memory) at 2026-11-23 12:00:00 UTC; 1 in all"
    ], timeline
    restarts = [e["detail"] for e in timeline if e["kind"] == "restart"]
    assert restarts == ["the pod's containers restarted: 1 restart(s) in all (was 0)"], timeline
    assert update_availability(local_cloud)["statistics"]["warnings_woken"] == 0


def test_a_deleted_pod_ends_the_reservation_and_its_gpus_go_to_the_next_in_queue(api, local_cloud):
    lost, other, waiting = h100s_full_and_one_queued(api)

    assert local_cloud.kubernetes is not None
    meta = the_pod(local_cloud, lost)["metadata"]
    local_cloud.kubernetes.store.delete("pods", meta["namespace"], meta["name"])
    update_availability(local_cloud)

    ended = wait_for_status(api, lost, ("failed", "cancelled", "expired"))
    assert ended["status"] == "failed"
    assert ended["failure_reason"] == f"pod {meta['name']} was deleted"
    assert_nothing_left(local_cloud, lost)
    wait_for_status(api, waiting, "active", profile="bob")
    assert show(api, other)["status"] == "active"


def test_a_removed_node_ends_the_reservation_and_its_replacement_serves_the_queue(api, local_cloud):
    lost, other, waiting = h100s_full_and_one_queued(api)

    # EC2 terminates the node's instance; its Auto Scaling group launches a replacement,
    # and the node of the old instance leaves the cluster (the stand-in follows the group).
    node = the_pod(local_cloud, lost)["spec"]["nodeName"]
    assert local_cloud.aws is not None and local_cloud.kubernetes is not None
    local_cloud.aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=node, ShouldDecrementDesiredCapacity=False
    )

    store = local_cloud.kubernetes.store

    def node_left() -> bool:
        return node not in {n["metadata"]["name"] for n in store.list("nodes", None)["items"]}

    wait_for(node_left, timeout=30, message=f"node {node} leaves the cluster")
    update_availability(local_cloud)

    ended = wait_for_status(api, lost, ("failed", "cancelled", "expired"))
    assert ended["status"] == "failed"
    assert ended["failure_reason"].startswith(f"node {node} of pod gpu-dev-{lost[:8]}")
    assert ended["failure_reason"].endswith("is gone")
    assert_nothing_left(local_cloud, lost)
    # the queue moves onto the replacement's GPUs, and nobody else is touched
    wait_for_status(api, waiting, "active", profile="bob")
    assert the_pod(local_cloud, waiting)["spec"]["nodeName"] != node
    assert show(api, other)["status"] == "active"
