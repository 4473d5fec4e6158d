"""A node released by one reservation is granted to the next only once the previous pod is
gone: pods terminate gracefully (GPUs held until then) and the kubelet refuses a pod pinned
to a node without free GPUs, so granting early would fail the next reservation."""

from __future__ import annotations

from tests.lifecycle.helpers import cancel, objects_of, reserve, show, wait_for_status
from tests.support.waiting import wait_for


def test_the_next_reservation_starts_on_a_just_released_node(api, local_cloud):
    holders = [reserve(api, gpu_type="h100", gpu_count=8, hours=1)["reservation_id"] for _ in "ab"]
    nodes = {}
    for holder in holders:
        wait_for_status(api, holder, "active")
        (pod,) = objects_of(local_cloud, holder)["pods"]
        nodes[holder] = pod["spec"]["nodeName"]
    waiting = reserve(api, gpu_type="h100", gpu_count=8, hours=1)["reservation_id"]
    wait_for(lambda: show(api, waiting)["queue_position"] == 1, message="queued behind both")

    released = holders[0]
    cancel(api, released)
    wait_for_status(api, released, "cancelled")
    active = wait_for_status(api, waiting, "active", timeout=30)
    (pod,) = objects_of(local_cloud, waiting)["pods"]
    assert pod["spec"]["nodeName"] == nodes[released]
    assert pod["status"]["phase"] == "Running"
    assert active["status"] == "active"
    assert objects_of(local_cloud, released)["pods"] == []
