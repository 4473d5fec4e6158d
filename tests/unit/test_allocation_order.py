"""The order the allocator keeps (gpudev/allocation/plan.py), as the soak's queue-order
invariant counts it (bench/sql/soak/queue_order.sql): behind a blocked head, a later request
of the same shape may start first only by asking for less time (EASY backfill); asking for as
much time or more, it never starts while an earlier one of its shape waits."""

from __future__ import annotations

import random
import uuid

from gpudev.allocation.plan import Holding, NodeCapacity, Request, plan

NOW = 1_000.0


def _h100_nodes(free: dict[str, int]) -> list[NodeCapacity]:
    return [NodeCapacity(name, "h100", 8, tuple(range(count))) for name, count in free.items()]


def _request(gpus: int, seconds: float) -> Request:
    nodes = 2 if gpus == 16 else 1
    return Request(uuid.uuid4(), "h100", gpus // nodes, nodes, seconds)


def test_a_shorter_request_of_the_same_shape_passes_a_longer_one_behind_a_blocked_head():
    # node a free now; node b held for 20 s: the 16-GPU head starts in 20 s on both
    nodes = _h100_nodes({"a": 8, "b": 0})
    holdings = [Holding("b", 8, NOW + 20)]
    head, longer, shorter = _request(16, 60), _request(8, 30), _request(8, 5)

    decisions = plan(nodes, holdings, [head, longer, shorter], NOW)

    # the longer one would still hold node a when the head starts; the shorter one is gone
    assert [g.reservation_id for g in decisions.grants] == [shorter.reservation_id]


def test_a_request_asking_as_much_time_never_passes_an_earlier_one_of_its_shape():
    rng = random.Random(12)
    passes = 0
    for _ in range(3_000):
        names = ["a", "b", "c"][: rng.randint(1, 3)]
        free = {name: rng.choice([0, 0, 4, 8]) for name in names}
        holdings = [
            Holding(name, 8 - count, NOW + rng.uniform(1, 50))
            for name, count in free.items()
            if count < 8
        ]
        queue = [
            _request(rng.choice([1, 4, 8, 16]), rng.choice([5.0, 10.0, 20.0, 40.0]))
            for _ in range(rng.randint(1, 6))
        ]
        granted = {g.reservation_id for g in plan(_h100_nodes(free), holdings, queue, NOW).grants}
        for i, earlier in enumerate(queue):
            for later in queue[i + 1 :]:
                same_shape = (earlier.slots_per_node, earlier.nodes) == (
                    later.slots_per_node,
                    later.nodes,
                )
                if not same_shape or earlier.reservation_id in granted:
                    continue
                if later.reservation_id in granted:
                    assert later.duration_seconds < earlier.duration_seconds
                    passes += 1
    assert passes > 0  # the scenarios do exercise backfill past a same-shape request
