"""A request the cluster can never place (issue #28 item 3): once the availability updater
has measured the node groups, a type with no nodes, or more nodes than its groups can scale
to, is refused at submit with one sentence naming the types that have nodes; nothing is
written and no job is sent. The CLI prints that sentence as its one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations, drain_jobs, reserve

EVENTS = Path(__file__).resolve().parents[2] / "events"
# localcloud/cluster.json: t4, h100 and cpu-x86 have node groups (MaxSize 8 each).
WITH_NODES = "types with nodes: h100, t4, cpu-x86"


@pytest.fixture
def measured(local_cloud: LocalCloud) -> LocalCloud:
    event = json.loads((EVENTS / "availability_updater" / "scheduled.json").read_text())
    assert not local_cloud.lambdas.invoke("AvailabilityUpdater", event).errored
    drain_jobs(local_cloud)
    return local_cloud


@pytest.mark.parametrize(
    ("fields", "missing"),
    [({"gpu_type": "a100", "gpu_count": 8}, "a100"), ({"gpu_type": "L4", "gpu_count": 1}, "l4"),
     ({"gpu_type": "cpu-arm", "gpu_count": 0}, "cpu-arm")],
)  # fmt: skip
def test_a_type_without_nodes_is_refused_at_submit_and_nothing_is_written(
    api, measured, fields, missing
):
    before = count_reservations(measured)
    reply = reserve(api, **fields)
    assert reply.status == 422, reply.body
    message = f"no {missing} nodes in this cluster; {WITH_NODES}"
    assert (reply.body["message"], reply.body["field"]) == (message, "gpu_type")
    assert reply.body["allowed"] == "h100, t4, cpu-x86"
    assert count_reservations(measured) == before
    assert drain_jobs(measured) == []


def test_a_type_with_nodes_is_still_accepted(api, measured):
    reply = reserve(api, gpu_type="t4", gpu_count=4)
    assert reply.status == 202, reply.body
    assert [j.kind for j in drain_jobs(measured)] == ["create_reservation"]


def test_the_cli_prints_the_sentence_as_its_one_line_error(run, measured):
    before = count_reservations(measured)
    result = run("reserve", "-t", "a100", "-g", "8", "--no-wait")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: no a100 nodes in this cluster; " + WITH_NODES)
    assert result.stderr.strip().count("\n") == 0
    assert count_reservations(measured) == before
