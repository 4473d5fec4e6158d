"""Capacity as users see it: the availability updater's numbers plus live demand."""

from __future__ import annotations

import json
from pathlib import Path

from localcloud.stack import LocalCloud
from tests.support.api import ApiClient

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _update_availability(cloud: LocalCloud) -> None:
    event = json.loads((EVENTS / "availability_updater" / "scheduled.json").read_text())
    assert not cloud.lambdas.invoke("AvailabilityUpdater", event).errored


def _by_type(api: ApiClient) -> dict[str, dict]:
    reply = api.call("GET", "/v1/gpu/availability")
    assert reply.status == 200
    return {t["gpu_type"]: t for t in reply.body["gpu_types"]}


def test_availability_reports_the_cluster_and_the_queue(api, local_cloud):
    _update_availability(local_cloud)
    before = _by_type(api)["t4"]
    assert (before["total_cluster_gpus"], before["max_per_node"]) == (8, 4)
    assert before["last_availability_update"] is not None
    api.call(
        "POST",
        "/v1/reservations",
        body={"gpu_type": "t4", "gpu_count": 2, "hours": 1, "github_user": "alice"},
    )
    after = _by_type(api)["t4"]
    assert after["queue_length"] == before["queue_length"] + 1
    assert after["queued_gpus"] == before["queued_gpus"] + 2
    assert after["estimated_wait_minutes"] is None  # queued work: the allocator will know


def test_cluster_status_sums_the_types(api, local_cloud):
    _update_availability(local_cloud)
    status = api.call("GET", "/v1/cluster/status").body
    types = status["by_gpu_type"]
    assert status["total_gpus"] == sum(t["total_cluster_gpus"] for t in types if t["max_per_node"])
    assert status["queued_reservations"] == sum(t["queue_length"] for t in types)
    assert status["total_gpus"] >= 24  # 2 x t4 (4) + 2 x h100 (8)


def test_capacity_needs_a_signature(api):
    assert api.call("GET", "/v1/gpu/availability", profile=None).status == 403
