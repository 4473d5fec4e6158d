"""Profiling reservations (CAP_SYS_ADMIN: root on the node) hold whole nodes and share them
with nobody: the planner (gpudev/allocation/plan.py) never packs one with another
reservation, nor another onto its node while it runs; where a GPU type has nodes dedicated
to profiling, profiling goes only there and nothing else does. The ETA replay holds the
whole node too."""

from __future__ import annotations

import random
import uuid

from gpudev.allocation.plan import plan
from gpudev.allocation.values import Decisions, Holding, NodeCapacity, Request

NOW = 1_000.0
PROBE_SECONDS = 8 * 3600.0
ALL = tuple(range(8))


def _node(name: str, free: tuple[int, ...] = ALL, profiling: bool = False) -> NodeCapacity:
    return NodeCapacity(name, "h100", 8, free, profiling)


def _request(
    rid: str, gpus: int = 1, nodes: int = 1, seconds: float = 3600.0, profiling: bool = False
) -> Request:
    return Request(rid, "h100", gpus, nodes, seconds, profiling)


def _plan(
    nodes: list[NodeCapacity],
    queue: list[Request],
    holdings: list[Holding] | None = None,
    profiling_types: tuple[str, ...] = (),
) -> Decisions:
    return plan(nodes, holdings or [], queue, NOW, PROBE_SECONDS, 0.0, None, profiling_types)


def _granted(decisions: Decisions) -> dict[str, tuple[tuple[str, tuple[int, ...]], ...]]:
    return {g.reservation_id: g.placements for g in decisions.grants}


def _eta(decisions: Decisions, rid: str) -> float | None:
    (wait,) = [w for w in decisions.waits if w.reservation_id == rid]
    return wait.eta_seconds


def test_a_one_gpu_profiling_request_takes_a_whole_free_node_never_a_partly_used_one():
    nodes = [_node("a", free=ALL[1:]), _node("b")]  # a: one GPU used by someone
    decisions = _plan(nodes, [_request("prof", profiling=True)], [Holding("a", 1, NOW + 60)])
    assert _granted(decisions) == {"prof": (("b", ALL),)}  # every slot of b, not best fit a


def test_an_ordinary_request_is_never_packed_onto_a_profiling_reservations_node():
    queue = [_request("prof", profiling=True), _request("plain"), _request("plain2", gpus=7)]
    granted = _granted(_plan([_node("a"), _node("b")], queue))
    assert granted["prof"] == (("a", ALL),)
    assert [node for node, _ in granted["plain"]] == ["b"]
    assert [node for node, _ in granted["plain2"]] == ["b"]
    # the next pass: the profiling reservation's node is held whole, so nothing fits there
    held = [Holding("a", 8, NOW + 3600), Holding("b", 8, NOW + 3600)]
    later = _plan([_node("a", ()), _node("b", ())], [_request("late")], held)
    assert _granted(later) == {} and _eta(later, "late") == 3600.0


def test_a_profiling_request_waits_in_the_replay_for_a_node_to_empty_entirely():
    """Seven GPUs free now are not enough: it starts when the node's last holder ends, and
    the ordinary request behind it starts at once on what profiling does not need."""
    nodes = [_node("a", free=ALL[1:])]
    held = [Holding("a", 1, NOW + 600)]
    queue = [_request("prof", profiling=True, seconds=900), _request("plain", seconds=300)]
    decisions = _plan(nodes, queue, held)
    assert _eta(decisions, "prof") == 600.0
    # backfill: it ends (at 300) before the profiling head's shadow time (600)
    assert [node for node, _ in _granted(decisions)["plain"]] == ["a"]
    # a long one would delay the head: it waits until profiling's whole node is free again
    long = _plan(nodes, [queue[0], _request("long", seconds=5000)], held)
    assert "long" not in _granted(long) and _eta(long, "long") == 600.0 + 900.0


def test_a_multinode_profiling_request_takes_whole_nodes_as_any_multinode_request():
    granted = _granted(
        _plan([_node("a"), _node("b"), _node("c", ALL[2:])], [_request("p", 8, 2, profiling=True)])
    )
    assert granted == {"p": (("a", ALL), ("b", ALL))}


def test_with_profiling_nodes_profiling_goes_only_there_and_nothing_else_does():
    nodes = [_node("shared"), _node("dedicated", free=(), profiling=True)]
    held = [Holding("dedicated", 8, NOW + 600)]
    queue = [_request("prof", profiling=True), _request("plain", gpus=8), _request("more")]
    decisions = _plan(nodes, queue, held)
    # the shared node is free, yet profiling waits for its own node
    assert _eta(decisions, "prof") == 600.0
    assert [node for node, _ in _granted(decisions)["plain"]] == ["shared"]
    # the dedicated node frees at 600, yet an ordinary request waits for the shared one
    assert _eta(decisions, "more") == 3600.0
    # a new (ordinary) request's wait is the shared nodes' only
    assert decisions.next_request_waits == {"h100": 3600.0}
    free_dedicated = _plan([_node("shared", ()), _node("dedicated", profiling=True)], queue[1:])
    assert _granted(free_dedicated) == {}


def test_a_cordoned_profiling_node_keeps_its_types_profiling_off_the_shared_nodes():
    decisions = _plan([_node("shared")], [_request("prof", profiling=True)], None, ("h100",))
    assert _granted(decisions) == {} and _eta(decisions, "prof") is None


def test_over_many_passes_a_profiling_reservations_node_holds_no_other_reservation():
    """Random arrivals of profiling and ordinary requests, with and without profiling
    nodes, planned pass after pass with the grants held until they end: after every pass,
    each node a profiling reservation holds is held by it alone, and wholly."""
    rng = random.Random(27)
    checked = 0
    for _ in range(60):
        dedicated = {f"n{i}" for i in range(6) if rng.random() < 0.3}
        capacity = {f"n{i}": 8 for i in range(6)}
        held: dict[str, dict[str, tuple[set[int], float]]] = {n: {} for n in capacity}
        profiling: set[str] = set()
        queue: list[Request] = []
        now = NOW
        for _ in range(30):
            for _ in range(rng.randint(0, 3)):
                rid = str(uuid.uuid4())
                asks = rng.random() < 0.3
                total = rng.choice([1, 1, 1, 2])
                gpus = 8 if total > 1 else rng.choice([1, 2, 4, 8])
                queue.append(_request(rid, gpus, total, rng.choice([60, 300, 900]), asks))
                if asks:
                    profiling.add(rid)
            for node in held.values():  # ended reservations give their slots back
                for rid in [r for r, (_, ends) in node.items() if ends <= now]:
                    del node[rid]
            nodes = [
                _node(
                    n,
                    tuple(s for s in range(8) if all(s not in v[0] for v in held[n].values())),
                    n in dedicated,
                )
                for n in capacity
            ]
            holdings = [
                Holding(n, len(slots), ends) for n in held for slots, ends in held[n].values()
            ]
            decisions = plan(nodes, holdings, queue, now, PROBE_SECONDS, 0.0)
            request_of = {r.reservation_id: r for r in queue}
            for grant in decisions.grants:
                ends = now + request_of[grant.reservation_id].duration_seconds
                for node, slots in grant.placements:
                    if dedicated:  # profiling there only, and nothing else there
                        assert (node in dedicated) == (grant.reservation_id in profiling)
                    held[node][grant.reservation_id] = (set(slots), ends)
            granted = {g.reservation_id for g in decisions.grants}
            queue = [r for r in queue if r.reservation_id not in granted]
            for holders in held.values():
                if holders.keys() & profiling:
                    ((slots, _),) = holders.values()  # the profiling reservation alone ...
                    assert slots == set(range(8))  # ... holding every slot
                    checked += 1
            now += rng.choice([30.0, 120.0, 600.0])
    assert checked > 100
