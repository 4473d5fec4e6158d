"""The planner's simulations of time (plan.py): when the head of a queue first fits as
reservations end (its shadow time, what backfill protects), and the ETA replay of the whole
queue in order on the known end times, each request holding its capacity once placed until
its expected end (values.py)."""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from itertools import count as numbers
from itertools import repeat

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
    first fits and then holds its capacity until its expected end. (The hot loop of a pass,
    once per waiting reservation: for a single-node request, its fit, its fit after a
    release (`fit_after_release`), the pool's give and take and `expected_end` are inlined.)"""
    simulated = pool.copy()
    free, buckets, capacity = simulated.free, simulated.buckets, simulated.capacity
    largest = simulated.largest
    events = list(releases)
    heapq.heapify(events)
    pop, push = heapq.heappop, heapq.heappush
    clock = now
    ids: list[str] = []
    etas: list[float | None] = []
    for request in queue:
        reservation_id, _, need, nodes, duration, _, _ = request
        ids.append(reservation_id)
        if nodes == 1 and need > 0:  # (a request for no slot fits where none is free)
            node = -1
            for count in range(need, largest + 1):
                if buckets[count]:
                    node = buckets[count][0]
                    break
            while node < 0 and events:
                ends_at, released, slots = pop(events)
                if ends_at > clock:
                    clock = ends_at
                had = free[released]  # give
                if had:
                    bucket = buckets[had]
                    del bucket[bisect_left(bucket, released)]
                has = had + slots
                if has > capacity[released]:
                    has = capacity[released]
                free[released] = has
                if has:
                    insort(buckets[has], released)
                if has >= need:
                    node = released
            if node < 0:
                etas.append(None)
                continue
            had = free[node]  # take
            bucket = buckets[had]
            del bucket[bisect_left(bucket, node)]
            free[node] = had - need
            if had > need:
                insort(buckets[had - need], node)
            push(events, (clock + (allowance_seconds + duration), node, need))  # expected_end
            etas.append(clock - now)  # the clock never goes back
            continue
        placement = simulated.fit(request)
        while not placement and events:
            ends_at, released, slots = pop(events)
            if ends_at > clock:
                clock = ends_at
            simulated.give(released, slots)
            placement = fit_after_release(simulated, request, released)
        if not placement:
            etas.append(None)
            continue
        ends = expected_end(clock, duration, allowance_seconds)
        for node in placement:
            simulated.take(node, need)
            push(events, (ends, node, need))
        etas.append(clock - now)
    # Waits built in C (tuple.__new__ over zipped columns): a NamedTuple's own constructor is
    # a Python call per waiting reservation.
    return list(map(tuple.__new__, repeat(Wait), zip(ids, numbers(1), etas)))
