"""The planner's simulations of time (plan.py): when the head of a queue first fits as
reservations end (its shadow time, what backfill protects), and the ETA replay of the whole
queue in order on the known end times, each request holding its capacity once placed until
its expected end (values.py)."""

from __future__ import annotations

import heapq

from gpudev.allocation.pool import Pool
from gpudev.allocation.values import Request, Wait, expected_end


def fit_after_release(pool: Pool, request: Request, released: int) -> list[int]:
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


def shadow(
    pool: Pool, releases: list[tuple[float, int, int]], head: Request
) -> tuple[float | None, list[int]]:
    """When the head first fits as reservations end, and per node what it leaves spare
    then; (None, []) if it never fits, when there is nothing to protect."""
    simulated = pool.copy()
    for ends_at, node, slots in sorted(releases):
        simulated.give(node, slots)
        placement = fit_after_release(simulated, head, node)
        if placement:
            spare = list(simulated.free)
            for taken in placement:
                spare[taken] -= head.slots_per_node
            return ends_at, spare
    return None, []


def etas(
    pool: Pool,
    releases: list[tuple[float, int, int]],
    queue: list[Request],
    now: float,
    allowance_seconds: float,
) -> list[Wait]:
    """Replays the queue in order on the known end times: each request starts when it
    first fits and then holds its capacity until its expected end. (The hot loop of a pass:
    a single-node request's fit, and its fit after a release (`fit_after_release`), are
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
                placement = fit_after_release(simulated, request, node)
        if not placement:
            append(Wait(request.reservation_id, position, None))
            continue
        ends = expected_end(clock, request.duration_seconds, allowance_seconds)
        for node in placement:
            take(node, need)
            push(events, (ends, node, need))
        append(Wait(request.reservation_id, position, clock - now))  # the clock never goes back
    return waits
