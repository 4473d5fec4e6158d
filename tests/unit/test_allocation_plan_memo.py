"""A GPU type's plan reused at a later `now` (gpudev/allocation/memo.py) is exactly the plan
made afresh then: on random clusters and queues (those of the equivalence test), planned at
one moment, then at later moments before, at and past the first start, with the same inputs;
and a type whose inputs changed is planned afresh."""

from __future__ import annotations

import random
import uuid

from gpudev.allocation import plan as current
from gpudev.allocation import values
from gpudev.allocation.memo import PlanMemo
from tests.unit.test_allocation_plan_equivalence import NOW, _scenario

PROBE_SECONDS = 8 * 3600.0


def _plan(nodes, holdings, queue, now, allowance, memo=None):  # type: ignore[no-untyped-def]
    return current.plan(
        [values.NodeCapacity(*n) for n in nodes],
        [values.Holding(*h) for h in holdings],
        [values.Request(*r) for r in queue],
        now,
        PROBE_SECONDS,
        allowance,
        memo,
    )


def test_a_reused_plan_is_the_plan_made_afresh_at_the_later_moment():
    rng = random.Random(2026_11_25)
    reused = 0
    for _ in range(800):
        nodes, holdings, queue = _scenario(rng)
        allowance = rng.choice([0.0, 15.0, 600.0])
        memo = PlanMemo()
        assert _plan(nodes, holdings, queue, NOW, allowance, memo) == _plan(
            nodes, holdings, queue, NOW, allowance
        )
        now = NOW
        for _ in range(3):
            # later, sometimes past an end time (holdings end 5 to 600 s after NOW)
            now += rng.choice([0.0, 0.5, 3.0, 4.0, 29.0, 61.0, 700.0])
            before = memo.reused
            assert _plan(nodes, holdings, queue, now, allowance, memo) == _plan(
                nodes, holdings, queue, now, allowance
            )
            reused += memo.reused - before
    assert reused > 500  # the scenarios do exercise reuse, not only planning afresh


def test_a_type_whose_inputs_changed_is_planned_afresh():
    memo = PlanMemo()
    nodes = [("h100-00", "h100", 8, ()), ("t4-00", "t4", 4, ())]
    holdings = [("h100-00", 8, NOW + 60), ("t4-00", 4, NOW + 60)]
    queue = [(str(uuid.uuid4()), "h100", 8, 1, 30.0), (str(uuid.uuid4()), "t4", 4, 1, 30.0)]
    _plan(nodes, holdings, queue, NOW, 0.0, memo)
    assert memo.reused == 0
    _plan(nodes, holdings, queue, NOW + 1, 0.0, memo)
    assert memo.reused == 2
    # the h100 head now asks for 2 hours: h100 is planned again, t4 reused
    longer = [(queue[0][0], "h100", 8, 1, 7200.0), queue[1]]
    decided = _plan(nodes, holdings, longer, NOW + 2, 0.0, memo)
    assert memo.reused == 3
    assert decided == _plan(nodes, holdings, longer, NOW + 2, 0.0)
