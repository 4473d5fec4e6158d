"""The allocator's planner as it was before the 2026-11-24 speed-ups (NamedTuple rows, the
single-node shortcut after a release): kept as the oracle that
`test_allocation_plan_equivalence.py` compares the current planner with, on random inputs.

Per GPU type, first come first served by creation time, with EASY backfill. The head of the
queue that cannot start now gets a reserved start, the shadow time: the earliest moment it
fits once running reservations end at their known end times. A later request may start now
only if it ends before the shadow time or runs on capacity the head will not need then, so
backfill never delays the head. Multinode requests take whole free nodes, all at once or
not at all. A slot is one GPU on a GPU node and one user on a CPU node (three per node).

ETAs replay the same end times for the whole queue in order, each request holding its
capacity for its duration once placed.

Profiling requests (2026-11-27) are granted whole nodes: each asks for every slot of its
pool's largest node. A GPU type with nodes dedicated to profiling has two pools, planned
apart: its profiling nodes for its profiling requests only, its other nodes for the rest.

Requests not parked yet (2026-11-27: pending, or queued before their park) are in the order
but never granted: as the head, one that fits now reserves what it would take (its shadow
time is now); behind the head, one waits like a request that does not fit.

Fabrics (2026-11-27: a node's zone and placement group): a multinode request takes whole
nodes of one fabric only, the first fabric to have enough of them in node-name order, and
there its first ones by name.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from uuid import UUID


@dataclass(frozen=True)
class NodeCapacity:
    name: str
    gpu_type: str
    slots: int
    free_slots: tuple[int, ...]  # slot numbers free now (unallocated and unused by others)
    profiling: bool = False  # dedicated to profiling
    fabric: str = ""  # zone and placement group


@dataclass(frozen=True)
class Holding:
    """Slots of a node that a live reservation holds until `ends_at` (epoch seconds)."""

    node: str
    slots: int
    ends_at: float


@dataclass(frozen=True)
class Request:
    reservation_id: UUID
    gpu_type: str
    slots_per_node: int
    nodes: int
    duration_seconds: float
    profiling: bool = False
    parked: bool = True  # not parked: never granted, but it keeps its place


@dataclass(frozen=True)
class Grant:
    reservation_id: UUID
    placements: tuple[tuple[str, tuple[int, ...]], ...]  # (node, slots) per rank


@dataclass(frozen=True)
class Wait:
    reservation_id: UUID
    position: int
    eta_seconds: float | None  # None: it cannot fit even on an empty cluster


@dataclass
class Decisions:
    grants: list[Grant] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)


class _Pool:
    """Free slot counts per node, bucketed by count, so that a fit costs O(slots per node)
    rather than O(nodes). Best fit: the fullest node that still has room."""

    def __init__(
        self, capacity: dict[str, int], free: dict[str, int], fabric: dict[str, str] | None = None
    ):
        self.fabric = fabric or {}
        self.capacity = capacity
        self.free = dict(free)
        self._buckets: dict[int, list[str]] = defaultdict(list)
        for name in sorted(self.free):
            self._buckets[self.free[name]].append(name)
        self._largest = max(capacity.values(), default=0)

    def copy(self) -> _Pool:
        return _Pool(self.capacity, self.free, self.fabric)

    def _move(self, name: str, count: int) -> None:
        bucket = self._buckets[self.free[name]]
        del bucket[bisect_left(bucket, name)]
        self.free[name] = count
        insort(self._buckets[count], name)

    def take(self, name: str, count: int) -> None:
        self._move(name, self.free[name] - count)

    def give(self, name: str, count: int) -> None:
        if name in self.free:
            self._move(name, min(self.capacity[name], self.free[name] + count))

    def fit(self, request: Request, allowed: Callable[[str], bool] | None = None) -> list[str]:
        """Nodes for the request (one per rank), or [] when it does not fit."""
        need = request.slots_per_node
        if request.nodes == 1:
            for count in range(need, self._largest + 1):
                for name in self._buckets.get(count, ()):
                    if allowed is None or allowed(name):
                        return [name]
            return []
        whole = [
            name
            for name in self._buckets.get(need, ())
            if self.capacity[name] == need and (allowed is None or allowed(name))
        ]
        # the fabric whose request.nodes-th whole node comes first by name
        best: list[str] = []
        for fabric in {self.fabric.get(name, "") for name in whole}:
            members = [name for name in whole if self.fabric.get(name, "") == fabric]
            if len(members) >= request.nodes and (
                not best or members[request.nodes - 1] < best[-1]
            ):
                best = members[: request.nodes]
        return best


def plan(
    nodes: Iterable[NodeCapacity],
    holdings: Iterable[Holding],
    queue: Iterable[Request],
    now: float,
) -> Decisions:
    """Decisions for every pool (a GPU type, or its profiling nodes); `queue` in arrival
    order."""
    nodes = list(nodes)
    with_profiling_nodes = {n.gpu_type for n in nodes if n.profiling}
    by_pool: dict[tuple[str, bool], list[NodeCapacity]] = defaultdict(list)
    for node in nodes:
        by_pool[(node.gpu_type, node.profiling)].append(node)
    waiting: dict[tuple[str, bool], list[Request]] = defaultdict(list)
    for request in queue:
        dedicated = request.profiling and request.gpu_type in with_profiling_nodes
        waiting[(request.gpu_type, dedicated)].append(request)
    holdings = list(holdings)
    decisions = Decisions()
    for pool, requests in waiting.items():
        pool_nodes = by_pool[pool]
        names = {n.name for n in pool_nodes}
        largest = max((n.slots for n in pool_nodes), default=0)
        requests = [
            Request(
                r.reservation_id,
                r.gpu_type,
                max(largest, r.slots_per_node),
                r.nodes,
                r.duration_seconds,
                True,
                r.parked,
            )
            if r.profiling
            else r
            for r in requests
        ]
        _plan_type(
            pool_nodes,
            [h for h in holdings if h.node in names],
            requests,
            now,
            decisions,
        )
    return decisions


def _plan_type(
    nodes: list[NodeCapacity],
    holdings: list[Holding],
    queue: list[Request],
    now: float,
    decisions: Decisions,
) -> None:
    pool = _Pool(
        {n.name: n.slots for n in nodes},
        {n.name: len(n.free_slots) for n in nodes},
        {n.name: n.fabric for n in nodes},
    )
    free_slots = {n.name: sorted(n.free_slots) for n in nodes}
    releases = [(h.ends_at, h.node, h.slots) for h in holdings]
    shadow: float | None = None
    spare: dict[str, int] = {}
    head_blocked = False
    still_waiting: list[Request] = []

    def grant(request: Request, placement: list[str]) -> None:
        ranks = []
        for name in placement:
            pool.take(name, request.slots_per_node)
            taken = free_slots[name][: request.slots_per_node]
            del free_slots[name][: request.slots_per_node]
            ranks.append((name, tuple(taken)))
            releases.append((now + request.duration_seconds, name, request.slots_per_node))
        decisions.grants.append(Grant(request.reservation_id, tuple(ranks)))

    for request in queue:
        if not head_blocked:
            placement = pool.fit(request)
            if placement and request.parked:
                grant(request, placement)
                continue
            head_blocked = True
            if placement:  # fits but not parked yet: what it would take now is its own
                shadow, spare = now, dict(pool.free)
                for name in placement:
                    spare[name] -= request.slots_per_node
            else:
                shadow, spare = _shadow(pool, releases, request)
            still_waiting.append(request)
            continue
        if not request.parked:
            still_waiting.append(request)
            continue
        ends = now + request.duration_seconds
        protects_head = shadow is not None and ends > shadow

        def outside_head(
            name: str, need: int = request.slots_per_node, spare: dict[str, int] = spare
        ) -> bool:
            return spare.get(name, need) >= need

        placement = pool.fit(request, outside_head if protects_head else None)
        if not placement:
            still_waiting.append(request)
            continue
        grant(request, placement)
        if protects_head:
            for name in placement:
                if name in spare:
                    spare[name] -= request.slots_per_node

    decisions.waits.extend(_etas(pool, releases, still_waiting, now))


def _shadow(
    pool: _Pool, releases: list[tuple[float, str, int]], head: Request
) -> tuple[float | None, dict[str, int]]:
    """When the head first fits as reservations end, and per node what it leaves spare
    then; (None, {}) if it never fits, when there is nothing to protect."""
    simulated = pool.copy()
    for ends_at, name, slots in sorted(releases):
        simulated.give(name, slots)
        placement = simulated.fit(head)
        if placement:
            spare = dict(simulated.free)
            for node in placement:
                spare[node] -= head.slots_per_node
            return ends_at, spare
    return None, {}


def _etas(
    pool: _Pool, releases: list[tuple[float, str, int]], queue: list[Request], now: float
) -> list[Wait]:
    simulated = pool.copy()
    events = list(releases)
    heapq.heapify(events)
    clock = now
    waits = []
    for position, request in enumerate(queue, start=1):
        placement = simulated.fit(request)
        while not placement and events:
            ends_at, name, slots = heapq.heappop(events)
            clock = max(clock, ends_at)
            simulated.give(name, slots)
            placement = simulated.fit(request)
        if not placement:
            waits.append(Wait(request.reservation_id, position, None))
            continue
        for name in placement:
            simulated.take(name, request.slots_per_node)
            heapq.heappush(events, (clock + request.duration_seconds, name, request.slots_per_node))
        waits.append(Wait(request.reservation_id, position, max(0.0, clock - now)))
    return waits


def eta_minutes(eta_seconds: float | None, seconds_per_hour: float) -> int | None:
    """Clock minutes (scaled like every lifecycle duration), rounded up."""
    if eta_seconds is None:
        return None
    return math.ceil(eta_seconds * 60 / seconds_per_hour)
