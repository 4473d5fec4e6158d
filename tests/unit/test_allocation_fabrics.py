"""Multinode grants stay in one fabric (gpudev/allocation/pool.py): nodes of one zone and
placement group, where EFA reaches (docs/multinode.md). Single-node requests go anywhere."""

from __future__ import annotations

import uuid

from gpudev.allocation.plan import plan
from gpudev.allocation.values import Holding, NodeCapacity, Request

NOW = 1_000.0
PROBE_SECONDS = 100.0
ZONE_A, ZONE_B = "us-east-2a/gpu-dev-h100", "us-east-2b/gpu-dev-h100"


def _node(name: str, fabric: str, free: int = 8) -> NodeCapacity:
    return NodeCapacity(name, "h100", 8, tuple(range(free)), False, fabric)


def _sixteen_gpus(seconds: float = 60.0) -> Request:
    return Request(str(uuid.uuid4()), "h100", 8, 2, seconds)


def test_a_sixteen_gpu_request_is_never_granted_two_nodes_in_different_zones():
    nodes = [_node("a", ZONE_A), _node("b", ZONE_B)]
    request = _sixteen_gpus()

    decisions = plan(nodes, [], [request], NOW, PROBE_SECONDS, 0.0)

    assert decisions.grants == []
    assert [(w.reservation_id, w.eta_seconds) for w in decisions.waits] == [
        (request.reservation_id, None)  # no fabric holds two nodes: never, not "now"
    ]


def test_a_sixteen_gpu_request_takes_the_first_fabric_with_two_whole_nodes():
    nodes = [_node("a", ZONE_A), _node("b", ZONE_B), _node("c", ZONE_B), _node("d", ZONE_A)]

    decisions = plan(nodes, [], [request := _sixteen_gpus()], NOW, PROBE_SECONDS, 0.0)

    # zone B's second node (c) comes before zone A's (d)
    assert decisions.grants[0].reservation_id == request.reservation_id
    assert [node for node, _ in decisions.grants[0].placements] == ["b", "c"]


def test_the_eta_of_a_multinode_request_waits_for_a_node_of_its_fabric():
    # b (zone B) frees at +10 but a's partner in zone A (c) only at +50
    nodes = [_node("a", ZONE_A), _node("b", ZONE_B, 0), _node("c", ZONE_A, 0)]
    holdings = [Holding("b", 8, NOW + 10), Holding("c", 8, NOW + 50)]
    request = _sixteen_gpus()

    decisions = plan(nodes, holdings, [request], NOW, PROBE_SECONDS, 0.0)

    assert decisions.grants == []
    assert decisions.waits[0].eta_seconds == 50.0


def test_single_node_requests_ignore_fabrics():
    nodes = [_node("a", ZONE_A, 2), _node("b", ZONE_B, 4)]
    request = Request(str(uuid.uuid4()), "h100", 4, 1, 60.0)

    decisions = plan(nodes, [], [request], NOW, PROBE_SECONDS, 0.0)

    assert [node for node, _ in decisions.grants[0].placements] == ["b"]
