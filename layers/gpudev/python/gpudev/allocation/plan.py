"""The allocator's decisions, pure: who starts now, and for everyone else a queue position
and an ETA.

Per GPU type, first come first served by creation time, with EASY backfill. The head of the
queue that cannot start now gets a reserved start, the shadow time: the earliest moment it
fits once running reservations end at their known end times. A later request may start now
only if its expected end comes before the shadow time or it runs on capacity the head will
not need then, so backfill never delays the head. Multinode requests take whole free nodes,
all at once or not at all. A slot is one GPU on a GPU node and one user on a CPU node (three
per node).

A reservation's expected end (`expected_end`) is its grant time plus the provisioning
allowance plus its duration: the one definition, used for what this pass grants, for
backfill, in the ETA replay, and by the service for a granted reservation's holding read
back from its row, so a grant's end is the same number in the pass that grants and in every
pass after. ETAs replay the end times for the whole queue in order, each request holding its
capacity once placed until its expected end. The same pass answers "how long would a new
request wait?" per GPU type (what `avail` and `status` show): a one-slot probe request put
at the back of each type's queue, decided like any other (0 when it would start now), then
dropped; being last, it changes nobody's decision.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from gpudev.allocation.pool import Pool

if TYPE_CHECKING:
    from gpudev.allocation.memo import PlanMemo


class NodeCapacity(NamedTuple):
    name: str
    gpu_type: str
    slots: int
    free_slots: tuple[int, ...]  # slot numbers free now (unallocated and unused by others)


class Holding(NamedTuple):
    """Slots of a node that a live reservation holds until `ends_at` (epoch seconds)."""

    node: str
    slots: int
    ends_at: float


class Request(NamedTuple):
    reservation_id: str  # a UUID as text
    gpu_type: str
    slots_per_node: int
    nodes: int
    duration_seconds: float


class Grant(NamedTuple):
    reservation_id: str  # a UUID as text
    placements: tuple[tuple[str, tuple[int, ...]], ...]  # (node, slots) per rank


class Wait(NamedTuple):
    reservation_id: str  # a UUID as text
    position: int
    eta_seconds: float | None  # None: it cannot fit even on an empty cluster


class TypeDecisions(NamedTuple):
    grants: list[Grant]  # real reservations only
    waits: list[Wait]
    probe_eta: float | None  # a new request's ETA (0.0: it would start now; None: never)


@dataclass
class Decisions:
    grants: list[Grant] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    # per GPU type with nodes or a queue: a new one-slot request's ETA (None: never fits)
    next_request_waits: dict[str, float | None] = field(default_factory=dict)


def expected_end(granted_at: float, duration_seconds: float, allowance_seconds: float) -> float:
    """When a reservation granted at `granted_at` (epoch seconds) is expected to give its
    capacity back until it is active (then its expiry tells): the provisioning allowance
    (how long it may take to become ready), then its whole duration."""
    return granted_at + (allowance_seconds + duration_seconds)


PROBE = "probe"  # the probe request's id; never a reservation's (a UUID as text)


def plan(
    nodes: Iterable[NodeCapacity],
    holdings: Iterable[Holding],
    queue: Iterable[Request],
    now: float,
    probe_seconds: float,
    allowance_seconds: float,
    memo: PlanMemo | None = None,
) -> Decisions:
    """Decisions for every GPU type; `queue` in arrival order. `probe_seconds`: how long the
    probe for a new request's ETA lasts (it matters only to backfill); `allowance_seconds`:
    the provisioning allowance of `expected_end`; `memo`: a type whose inputs are those of
    its last plan there may reuse it (memo.py)."""
    by_type: dict[str, list[NodeCapacity]] = defaultdict(list)
    for node in nodes:
        by_type[node.gpu_type].append(node)
    waiting: dict[str, list[Request]] = defaultdict(list)
    for request in queue:
        waiting[request.gpu_type].append(request)
    holdings = list(holdings)
    decisions = Decisions()
    for gpu_type in sorted(set(waiting) | set(by_type)):
        names = {n.name for n in by_type[gpu_type]}
        type_nodes = by_type[gpu_type]
        type_holdings = [h for h in holdings if h.node in names]
        type_queue = waiting[gpu_type]

        def plan_type(
            gpu_type: str = gpu_type,
            type_nodes: list[NodeCapacity] = type_nodes,
            type_holdings: list[Holding] = type_holdings,
            type_queue: list[Request] = type_queue,
        ) -> TypeDecisions:
            probe = Request(PROBE, gpu_type, 1, 1, probe_seconds)
            decided = Decisions()
            _plan_type(
                type_nodes, type_holdings, [*type_queue, probe], now, allowance_seconds, decided
            )
            # the probe is last in the queue, so its grant or wait is the last one
            if decided.grants and decided.grants[-1].reservation_id is PROBE:
                decided.grants.pop()
                return TypeDecisions(decided.grants, decided.waits, 0.0)
            return TypeDecisions(decided.grants, decided.waits, decided.waits.pop().eta_seconds)

        if memo is None:
            decided = plan_type()
        else:
            inputs = (type_nodes, type_holdings, type_queue, probe_seconds, allowance_seconds)
            decided = memo.decide(gpu_type, inputs, now, plan_type)
        decisions.grants += decided.grants
        decisions.waits += decided.waits
        decisions.next_request_waits[gpu_type] = decided.probe_eta
    return decisions


def _plan_type(
    nodes: list[NodeCapacity],
    holdings: list[Holding],
    queue: list[Request],
    now: float,
    allowance_seconds: float,
    decisions: Decisions,
) -> None:
    nodes = sorted(nodes, key=lambda n: n.name)  # a node is its place in name order (pool.py)
    number = {n.name: i for i, n in enumerate(nodes)}
    pool = Pool([n.slots for n in nodes], [len(n.free_slots) for n in nodes])
    free_slots = [sorted(n.free_slots) for n in nodes]
    releases = [(h.ends_at, number[h.node], h.slots) for h in holdings]
    shadow: float | None = None
    spare: list[int] = []
    head_blocked = False
    still_waiting: list[Request] = []
    # Since the last grant (the only change to the pool and to `spare`), the fewest slots a
    # single-node request failed to find, on any node (`no_fit`) and outside the head's
    # (`no_fit_outside`): a later one asking for as many or more fails too, without a search.
    no_fit = no_fit_outside = math.inf

    def grant(request: Request, placement: list[int]) -> None:
        if request.reservation_id is PROBE:
            # A new request would start now. It takes nothing: were its slots held until
            # `probe_seconds` in the ETA replay, the real requests backfilled around it
            # would wait for it.
            decisions.grants.append(Grant(PROBE, ()))
            return
        nonlocal no_fit, no_fit_outside
        no_fit = no_fit_outside = math.inf
        ranks = []
        need = request.slots_per_node
        ends = expected_end(now, request.duration_seconds, allowance_seconds)
        for node in placement:
            pool.take(node, need)
            taken = free_slots[node][:need]
            del free_slots[node][:need]
            ranks.append((nodes[node].name, tuple(taken)))
            releases.append((ends, node, need))
        decisions.grants.append(Grant(request.reservation_id, tuple(ranks)))

    for request in queue:
        if not head_blocked:
            placement = pool.fit(request)
            if placement:
                grant(request, placement)
                continue
            head_blocked = True
            shadow, spare = _shadow(pool, releases, request)
            still_waiting.append(request)
            continue
        need = request.slots_per_node
        protects_head = (
            shadow is not None
            and expected_end(now, request.duration_seconds, allowance_seconds) > shadow
        )
        single = request.nodes == 1
        if single and need >= (min(no_fit, no_fit_outside) if protects_head else no_fit):
            still_waiting.append(request)
            continue
        if protects_head:

            def outside_head(node: int, need: int = need, spare: list[int] = spare) -> bool:
                return spare[node] >= need

            placement = pool.fit(request, outside_head)
        else:
            placement = pool.fit(request)
        if not placement:
            if single and protects_head:
                no_fit_outside = min(no_fit_outside, need)
            elif single:
                no_fit = min(no_fit, need)
            still_waiting.append(request)
            continue
        grant(request, placement)
        if protects_head:
            for node in placement:
                spare[node] -= need

    decisions.waits.extend(_etas(pool, releases, still_waiting, now, allowance_seconds))


def _fit_after_release(pool: Pool, request: Request, released: int) -> list[int]:
    """`pool.fit(request)` when it did not fit before `released` got slots back (no other
    node's free count changed): then only that node can take a single-node request, and a
    multinode one can fit only if that node is now whole (free, with as many slots as it
    asks per node)."""
    need = request.slots_per_node
    if request.nodes == 1:
        return [released] if pool.free[released] >= need else []
    if pool.free[released] == need == pool.capacity[released]:
        return pool.fit(request)
    return []


def _shadow(
    pool: Pool, releases: list[tuple[float, int, int]], head: Request
) -> tuple[float | None, list[int]]:
    """When the head first fits as reservations end, and per node what it leaves spare
    then; (None, []) if it never fits, when there is nothing to protect."""
    simulated = pool.copy()
    for ends_at, node, slots in sorted(releases):
        simulated.give(node, slots)
        placement = _fit_after_release(simulated, head, node)
        if placement:
            spare = list(simulated.free)
            for taken in placement:
                spare[taken] -= head.slots_per_node
            return ends_at, spare
    return None, []


def _etas(
    pool: Pool,
    releases: list[tuple[float, int, int]],
    queue: list[Request],
    now: float,
    allowance_seconds: float,
) -> list[Wait]:
    """Replays the queue in order on the known end times: each request starts when it
    first fits and then holds its capacity until its expected end. (The hot loop of a pass:
    a single-node request's fit, and its fit after a release (`_fit_after_release`), are
    inlined.)"""
    simulated = pool.copy()
    free, buckets, largest = simulated.free, simulated.buckets, simulated.largest
    fit, give, take = simulated.fit, simulated.give, simulated.take
    events = list(releases)
    heapq.heapify(events)
    pop, push = heapq.heappop, heapq.heappush
    clock = now
    waits: list[Wait] = []
    append = waits.append
    for position, request in enumerate(queue, start=1):
        need = request.slots_per_node
        if request.nodes == 1:
            placement = []
            for count in range(need, largest + 1):
                if buckets[count]:
                    placement = [buckets[count][0]]
                    break
            while not placement and events:
                ends_at, node, slots = pop(events)
                if ends_at > clock:
                    clock = ends_at
                give(node, slots)
                if free[node] >= need:
                    placement = [node]
        else:
            placement = fit(request)
            while not placement and events:
                ends_at, node, slots = pop(events)
                if ends_at > clock:
                    clock = ends_at
                give(node, slots)
                placement = _fit_after_release(simulated, request, node)
        if not placement:
            append(Wait(request.reservation_id, position, None))
            continue
        ends = expected_end(clock, request.duration_seconds, allowance_seconds)
        for node in placement:
            take(node, need)
            push(events, (ends, node, need))
        append(Wait(request.reservation_id, position, clock - now))  # the clock never goes back
    return waits


def eta_minutes(eta_seconds: float | None, seconds_per_hour: float) -> int | None:
    """Clock minutes (scaled like every lifecycle duration), rounded up."""
    if eta_seconds is None:
        return None
    return math.ceil(eta_seconds * 60 / seconds_per_hour)
