"""The allocator's decisions, pure: who starts now, and for everyone else a queue position
and an ETA.

Per GPU type, first come first served by creation time, with EASY backfill. The queue holds
every waiting request, parked on a task token or not yet (pending, or queued before its
park): only a parked one can be granted, but one not parked yet keeps its place, so a later
request never takes what it needs. The head of the queue that cannot start now (it does not
fit, or it is not parked yet) gets a reserved start, the shadow time (now, for a head not
parked yet that fits): the earliest moment it
fits once running reservations end at their known end times. A later request may start now
only if its expected end (values.py) comes before the shadow time or it runs on capacity the
head will not need then, so backfill never delays the head. Multinode requests take whole
free nodes of one fabric (one zone and placement group: pool.py), all at once or not at
all. A slot is one GPU on a GPU node and one user on a CPU node (three per node).

ETAs replay the end times for the whole queue in order (replay.py). The same pass answers
"how long would a new request wait?" per GPU type (what `avail` and `status` show): a
one-slot probe request put at the back of each type's queue, decided like any other (0 when
it would start now), then dropped; being last, it changes nobody's decision.

Profiling (CAP_SYS_ADMIN, root on the node) is never packed with anyone: a profiling request
asks for its nodes whole (as many slots per node as the largest node of its pool has), so it
starts only on an entirely free node, holds every slot of it until it ends, and the replay
and backfill see the whole node taken. Where a GPU type has nodes dedicated to profiling
(`NodeCapacity.profiling`, or named in `profiling_types`), those form a pool of their own:
the type's profiling requests go only there and its other requests never do; each pool is
planned as a type is, first come first served within it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from operator import itemgetter
from typing import TYPE_CHECKING

from gpudev.allocation import replay
from gpudev.allocation.pool import Pool
from gpudev.allocation.values import (
    PROBE,
    Decisions,
    Grant,
    Holding,
    NodeCapacity,
    Request,
    TypeDecisions,
    expected_end,
)

if TYPE_CHECKING:
    from gpudev.allocation.memo import PlanMemo

PROFILING_FIELD = itemgetter(Request._fields.index("profiling"))


def plan(
    nodes: Iterable[NodeCapacity],
    holdings: Iterable[Holding],
    queue: Iterable[Request],
    now: float,
    probe_seconds: float,
    allowance_seconds: float,
    memo: PlanMemo | None = None,
    profiling_types: Iterable[str] = (),
) -> Decisions:
    """Decisions for every GPU type; `queue` in arrival order. `probe_seconds`: how long the
    probe for a new request's ETA lasts (it matters only to backfill); `allowance_seconds`:
    the provisioning allowance of `expected_end`; `memo`: a type whose inputs are those of
    its last plan there may reuse it (memo.py); `profiling_types`: types with profiling
    nodes besides those among `nodes` (a cordoned one: the type's profiling waits for it)."""
    nodes = list(nodes)
    dedicated = set(profiling_types) | {n.gpu_type for n in nodes if n.profiling}
    by_pool: dict[tuple[str, bool], list[NodeCapacity]] = defaultdict(list)
    for node in nodes:
        by_pool[node.gpu_type, node.profiling].append(node)
    by_type: dict[str, list[Request]] = defaultdict(list)
    for request in queue:
        by_type[request.gpu_type].append(request)
    # (split only for a type with profiling nodes: a pass at scale reads 100,000 requests)
    waiting: dict[tuple[str, bool], list[Request]] = {}
    for gpu_type, requests in by_type.items():
        if gpu_type in dedicated:
            waiting[gpu_type, True] = [r for r in requests if r.profiling]
            waiting[gpu_type, False] = [r for r in requests if not r.profiling]
        else:
            waiting[gpu_type, False] = requests
    holdings = list(holdings)
    decisions = Decisions()
    for gpu_type, profiling_pool in sorted(set(waiting) | set(by_pool)):
        type_nodes = by_pool[gpu_type, profiling_pool]
        names = {n.name for n in type_nodes}
        type_holdings = [h for h in holdings if h.node in names]
        type_queue = whole_nodes(waiting.get((gpu_type, profiling_pool), []), type_nodes)

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
            key = f"{gpu_type} (profiling nodes)" if profiling_pool else gpu_type
            decided = memo.decide(key, inputs, now, plan_type)
        decisions.grants += decided.grants
        decisions.waits += decided.waits
        if not profiling_pool:  # a new (ordinary) request's wait: the type's shared nodes
            decisions.next_request_waits[gpu_type] = decided.probe_eta
    return decisions


def whole_nodes(queue: list[Request], nodes: list[NodeCapacity]) -> list[Request]:
    """The pool's queue with each profiling request asking for its nodes whole: every slot
    of the pool's largest node, per node (a multinode request asks for that already)."""
    if not any(map(PROFILING_FIELD, queue)):  # (in C: no Python call per request)
        return queue
    whole = max((n.slots for n in nodes), default=0)
    return [
        request._replace(slots_per_node=max(whole, request.slots_per_node))
        if request.profiling
        else request
        for request in queue
    ]


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
    fabric_numbers: dict[str, int] = {}
    fabrics = [fabric_numbers.setdefault(n.fabric, len(fabric_numbers)) for n in nodes]
    pool = Pool(
        [n.slots for n in nodes],
        [len(n.free_slots) for n in nodes],
        fabrics if len(fabric_numbers) > 1 else None,
    )
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
            if placement and request.parked:
                grant(request, placement)
                continue
            head_blocked = True
            if placement:
                # not parked yet, but it fits: it starts once it parks, so the capacity it
                # would take now is reserved for it (its shadow time is now)
                shadow, spare = now, list(pool.free)
                for node in placement:
                    spare[node] -= request.slots_per_node
            else:
                shadow, spare = replay.shadow(pool, releases, request)
            still_waiting.append(request)
            continue
        if not request.parked:  # behind the head: it waits, its place kept for the replay
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

    decisions.waits.extend(replay.etas(pool, releases, still_waiting, now, allowance_seconds))


def eta_minutes(eta_seconds: float | None, seconds_per_hour: float) -> int | None:
    """Clock minutes (scaled like every lifecycle duration), rounded up."""
    if eta_seconds is None:
        return None
    return math.ceil(eta_seconds * 60 / seconds_per_hour)
