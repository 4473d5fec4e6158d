"""Capacity as users see it: the availability updater's numbers plus live demand."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from localcloud.stack import LocalCloud
from tests.support.api import ApiClient

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _update_availability(cloud: LocalCloud) -> None:
    event = json.loads((EVENTS / "availability_updater" / "scheduled.json").read_text())
    assert not cloud.lambdas.invoke("AvailabilityUpdater", event).errored


def _allocate(cloud: LocalCloud) -> None:
    event = json.loads((EVENTS / "allocator" / "scheduled.json").read_text())
    assert not cloud.lambdas.invoke("Allocator", event).errored


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
    _allocate(local_cloud)
    # the allocator's ETA for a new one-GPU request: t4 has free GPUs, so it starts now;
    # a type with no node has no ETA
    waits = {name: t["estimated_wait_minutes"] for name, t in _by_type(api).items()}
    assert waits["t4"] == 0 and waits["h100"] == 0
    assert waits["b200"] is None


def test_availability_shows_the_allocators_wait_for_a_new_request(api, local_cloud):
    _allocate(local_cloud)
    with psycopg.connect(local_cloud.database_url, autocommit=True) as conn:
        conn.execute("UPDATE gpu_types SET estimated_wait_minutes = 579 WHERE gpu_type = 't4'")
    assert _by_type(api)["t4"]["estimated_wait_minutes"] == 579
    status = api.call("GET", "/v1/cluster/status").body
    assert {t["gpu_type"]: t for t in status["by_gpu_type"]}["t4"]["estimated_wait_minutes"] == 579
    _allocate(local_cloud)  # the next pass writes its own figure back
    assert _by_type(api)["t4"]["estimated_wait_minutes"] == 0


def test_cluster_status_sums_the_types(api, local_cloud):
    _update_availability(local_cloud)
    status = api.call("GET", "/v1/cluster/status").body
    types = status["by_gpu_type"]
    assert status["total_gpus"] == sum(t["total_cluster_gpus"] for t in types if t["max_per_node"])
    assert status["queued_reservations"] == sum(t["queue_length"] for t in types)
    assert status["total_gpus"] >= 24  # 2 x t4 (4) + 2 x h100 (8)


def test_capacity_needs_a_signature(api):
    assert api.call("GET", "/v1/gpu/availability", profile=None).status == 403
