"""The planner's pool (`allocation/pool.py`) keeps nodes with no free slot out of its buckets;
its fits stay what a plain best fit over every node gives (the fullest node with room, the
first among equals; multinode: whole free nodes, the first ones), through random takes and
gives that empty and refill nodes, and for a request of no slot too."""

from __future__ import annotations

import random
from collections.abc import Callable

from gpudev.allocation.pool import Pool
from gpudev.allocation.values import Request


def _best_fit(
    capacity: list[int], free: list[int], need: int, nodes: int, allowed: Callable[[int], bool]
) -> list[int]:
    if nodes == 1:
        room = [(free[n], n) for n in range(len(free)) if free[n] >= need and allowed(n)]
        return [min(room)[1]] if room else []
    whole = [n for n in range(len(free)) if free[n] == capacity[n] == need and allowed(n)]
    return whole[:nodes] if len(whole) >= nodes else []


def test_fits_match_a_plain_best_fit_as_nodes_empty_and_refill():
    rng = random.Random(13)
    for _ in range(200):
        capacity = [rng.choice([3, 4, 8]) for _ in range(rng.randint(1, 12))]
        free = [rng.randint(0, c) for c in capacity]
        pool = Pool(capacity, free)
        for _ in range(60):
            node = rng.randrange(len(capacity))
            if rng.random() < 0.5 and pool.free[node]:
                pool.take(node, rng.randint(1, pool.free[node]))
            else:
                pool.give(node, rng.randint(1, capacity[node]))
            assert pool.buckets[0] == []
            for count in range(1, pool.largest + 1):
                assert pool.buckets[count] == [n for n, f in enumerate(pool.free) if f == count]
            need, nodes = rng.randint(0, 8), rng.choice([1, 1, 2])
            request = Request("r", "h100", need, nodes, 60.0)
            odd = rng.random() < 0.3
            allowed = (lambda n: n % 2 == 1) if odd else (lambda n: True)
            expected = _best_fit(capacity, pool.free, need, nodes, allowed)
            assert pool.fit(request, allowed if odd else None) == expected


def test_a_request_of_no_slot_fits_the_first_full_node():
    pool = Pool([8, 8, 8], [5, 0, 0])
    assert pool.fit(Request("r", "h100", 0, 1, 60.0)) == [1]
    assert pool.fit(Request("r", "h100", 1, 1, 60.0)) == [0]
