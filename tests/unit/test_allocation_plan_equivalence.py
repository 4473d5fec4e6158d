"""The faster planner (gpudev/allocation/plan.py) decides exactly what the planner before it
did (tests/unit/allocation_plan_reference.py): the same grants on the same slots, and the
same positions and ETAs, on random clusters and queues of several GPU types, CPU nodes,
partly free nodes, multinode requests, releases at equal times, profiling requests (whole
nodes) with and without nodes dedicated to them, and requests not parked yet (never granted,
their place kept).

The current planner holds a placed request's capacity until its expected end
(`values.expected_end`: the provisioning allowance, then the duration), as the service does for
a granted reservation read back from its row; the reference holds it for its duration. So
the reference is given each request's duration plus the allowance: the same end times, hence
the same decisions to compare. (The probe, which the reference does not have, takes nothing.)"""

from __future__ import annotations

import random
import uuid

from gpudev.allocation import plan as current
from gpudev.allocation import values
from tests.unit import allocation_plan_reference as reference

NOW = 10_000.0


FABRICS = ("us-east-2a/pg-1", "us-east-2a/pg-2", "us-east-2b/pg-3")


def _scenario(
    rng: random.Random, profiling: bool = False, unparked: float = 0.0, fabrics: bool = False
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """`profiling`: some requests ask for it, and some types have profiling nodes;
    `unparked`: the share of requests not parked yet; `fabrics`: nodes are in several
    zones and placement groups (`NodeCapacity.fabric`)."""
    nodes, holdings, queue = [], [], []
    for gpu_type, slots in (("h100", 8), ("a100", 4), ("cpu", 3)):
        dedicated = profiling and rng.random() < 0.5
        for i in range(rng.randint(0, 12)):
            name = f"{gpu_type}-{i:02d}"
            held = rng.choice([0, 0, slots, rng.randint(0, slots)])
            on_profiling = dedicated and rng.random() < 0.3
            fabric = rng.choice(FABRICS) if fabrics else ""
            nodes.append((name, gpu_type, slots, tuple(range(held, slots)), on_profiling, fabric))
            # some end at the same time, some never get a release (other workloads)
            if held and rng.random() < 0.9:
                holdings.append((name, held, NOW + rng.choice([5, 30, 30, 60, 600])))
        for _ in range(rng.randint(0, 40)):
            total = rng.choice([1, 1, 2, 3] if fabrics else [1, 1, 2]) if gpu_type != "cpu" else 1
            per_node = slots if total > 1 else rng.randint(1, slots)
            if rng.random() < 0.05:
                per_node = slots + 1  # never fits
            duration = rng.choice([10, 20, 20, 45, 90, 3600])
            asks = profiling and rng.random() < 0.25
            parked = rng.random() >= unparked
            queue.append(
                (str(uuid.uuid4()), gpu_type, per_node, total, float(duration), asks, parked)
            )
    rng.shuffle(queue)  # arrival order interleaves types
    return nodes, holdings, queue


def _decide(module, nodes, holdings, queue, allowance):  # type: ignore[no-untyped-def]
    if module is current:
        # the current planner also decides a probe request per type (a new request's ETA),
        # at the back of each queue: it must change no real decision, so it is left in here
        decisions = current.plan(
            [values.NodeCapacity(*n) for n in nodes],
            [values.Holding(*h) for h in holdings],
            [values.Request(*r) for r in queue],
            NOW,
            8 * 3600.0,
            allowance,
        )
    else:
        decisions = reference.plan(
            [reference.NodeCapacity(*n) for n in nodes],
            [reference.Holding(*h) for h in holdings],
            [reference.Request(*r[:4], allowance + r[4], r[5], r[6]) for r in queue],
            NOW,
        )
    grants = [(g.reservation_id, tuple(g.placements)) for g in decisions.grants]
    waits = [(w.reservation_id, w.position, w.eta_seconds) for w in decisions.waits]
    # the order between GPU types is not a decision (one statement writes them all)
    return sorted(grants), sorted(waits)


def test_the_planner_decides_as_the_reference_planner_on_random_inputs():
    rng = random.Random(2026_11_24)
    granted = waited = 0
    for _ in range(1_500):
        nodes, holdings, queue = _scenario(rng)
        allowance = rng.choice([0.0, 0.0, 15.0, 600.0])
        ours = _decide(current, nodes, holdings, queue, allowance)
        assert ours == _decide(reference, nodes, holdings, queue, allowance)
        granted += len(ours[0])
        waited += sum(1 for w in ours[1] if w[2])
    # the scenarios exercise both paths: grants now and waits with an ETA
    assert granted > 1_000 and waited > 1_000


def test_the_planner_decides_as_the_reference_planner_with_profiling_requests_and_nodes():
    rng = random.Random(2026_11_27)
    granted = waited = whole = 0
    for _ in range(800):
        nodes, holdings, queue = _scenario(rng, profiling=True)
        allowance = rng.choice([0.0, 0.0, 15.0, 600.0])
        ours = _decide(current, nodes, holdings, queue, allowance)
        assert ours == _decide(reference, nodes, holdings, queue, allowance)
        granted += len(ours[0])
        waited += sum(1 for w in ours[1] if w[2])
        profiling = {r[0] for r in queue if r[5]}
        whole += sum(1 for g in ours[0] if g[0] in profiling)
    assert granted > 500 and waited > 500 and whole > 100


def test_the_planner_decides_as_the_reference_planner_with_requests_not_parked_yet():
    rng = random.Random(2026_11_28)
    granted = waited = kept = 0
    for _ in range(800):
        nodes, holdings, queue = _scenario(rng, profiling=rng.random() < 0.3, unparked=0.3)
        allowance = rng.choice([0.0, 0.0, 15.0, 600.0])
        ours = _decide(current, nodes, holdings, queue, allowance)
        assert ours == _decide(reference, nodes, holdings, queue, allowance)
        granted += len(ours[0])
        waited += sum(1 for w in ours[1] if w[2])
        not_parked = {r[0] for r in queue if not r[6]}
        assert not not_parked & {g[0] for g in ours[0]}  # never granted
        kept += sum(1 for w in ours[1] if w[0] in not_parked and w[2] == 0.0)
    # not parked yet and fitting now: ETA 0, it starts at its park
    assert granted > 300 and waited > 300 and kept > 100


def test_the_planner_decides_as_the_reference_planner_with_nodes_in_several_fabrics():
    """A multinode request (16 GPUs of h100: two whole nodes) is granted nodes of one zone
    and placement group only, in both planners."""
    rng = random.Random(2026_11_29)
    granted = waited = multinode = 0
    for _ in range(1_000):
        nodes, holdings, queue = _scenario(rng, profiling=rng.random() < 0.3, fabrics=True)
        allowance = rng.choice([0.0, 0.0, 15.0, 600.0])
        ours = _decide(current, nodes, holdings, queue, allowance)
        assert ours == _decide(reference, nodes, holdings, queue, allowance)
        fabric_of = {n[0]: n[5] for n in nodes}
        zone_of = {name: fabric.split("/")[0] for name, fabric in fabric_of.items()}
        for _, placements in ours[0]:
            assert len({fabric_of[node] for node, _ in placements}) == 1
            assert len({zone_of[node] for node, _ in placements}) == 1
            multinode += len(placements) > 1
        granted += len(ours[0])
        waited += sum(1 for w in ours[1] if w[2])
    assert granted > 500 and waited > 500 and multinode > 200
