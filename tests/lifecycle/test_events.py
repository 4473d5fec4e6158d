"""The Lambda test events in events/ for the lifecycle's functions are accepted by their
handlers (what an operator gets from "Test" in the Lambda console)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from tests.lifecycle.helpers import assert_nothing_left, objects_of
from tests.support.databases import insert_pending_reservation

EVENTS = Path(__file__).resolve().parents[2] / "events"
RID = "0c0ffee0-0000-4000-8000-0000000000aa"  # the reservation the events name


def _invoke(cloud, function: str, event_file: str):
    event = json.loads((EVENTS / event_file).read_text())
    invocation = cloud.lambdas.invoke(function, event)
    assert not invocation.errored, invocation.payload
    return invocation.payload


def test_each_reservation_task_event_is_accepted(local_cloud):
    # The events play the state machine by hand, the allocation included: no scheduled
    # allocator pass may grant the reservation once `wait_while_active` parks its token (it
    # did, under load: two nodes for a one-node reservation).
    local_cloud.ticker.pause("Allocator")
    _invoke(local_cloud, "Allocator", "allocator/scheduled.json")  # the nodes, synced once
    insert_pending_reservation(local_cloud.database_url, RID)
    start = _invoke(local_cloud, "ReservationTasks", "reservation_tasks/start.json")
    assert start["outcome"] == "queue" and start["queue_timeout_seconds"] > 0
    ready = _invoke(local_cloud, "ReservationTasks", "reservation_tasks/check_ready.json")
    assert ready["outcome"] == "waiting"
    checkpoint = _invoke(local_cloud, "ReservationTasks", "reservation_tasks/checkpoint.json")
    assert checkpoint["outcome"] == "gone"  # not active: nothing to check
    _invoke(local_cloud, "ReservationTasks", "reservation_tasks/wait_while_active.json")
    with psycopg.connect(local_cloud.database_url) as conn:
        node = conn.execute(
            "SELECT node_name FROM cluster_nodes WHERE gpu_type = 't4' AND schedulable"
            " AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.node_name ="
            " cluster_nodes.node_name AND a.slot = 3) LIMIT 1"
        ).fetchone()
        conn.execute(
            "INSERT INTO allocations (node_name, slot, reservation_id) VALUES (%s, 3, %s)",
            (node[0], RID),
        )
    provision = _invoke(local_cloud, "ReservationTasks", "reservation_tasks/provision.json")
    assert provision["outcome"] == "provisioning"
    assert len(objects_of(local_cloud, RID)["pods"]) == 1
    ended = _invoke(local_cloud, "ReservationTasks", "reservation_tasks/tear_down.json")
    assert (
        ended["status"] == "cancelled" and ended["objects_deleted"] == 8
    )  # pod, 2 services, ConfigMap, Secret, NetworkPolicy, the share's claim and volume
    assert_nothing_left(local_cloud, RID)
    _invoke(local_cloud, "ReservationTasks", "reservation_tasks/wait_for_capacity.json")


def test_the_consumer_and_allocator_events_are_accepted(local_cloud):
    consumed = _invoke(local_cloud, "JobsConsumer", "jobs_consumer/create_reservation.json")
    assert consumed == {"batchItemFailures": []}
    allocated = _invoke(local_cloud, "Allocator", "allocator/scheduled.json")
    assert allocated["nodes"] >= 5
