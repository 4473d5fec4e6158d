"""The order the allocator keeps (gpudev/allocation/plan.py), as the soak's queue-order
invariant counts it (bench/sql/soak/queue_order.sql): behind a blocked head, a later request
of the same shape may start first only by asking for less time (EASY backfill); asking for as
much time or more, it never starts while an earlier one of its shape waits."""

from __future__ import annotations

import random
import uuid

from gpudev.allocation.plan import plan
from gpudev.allocation.values import Holding, NodeCapacity, Request, expected_end

NOW = 1_000.0
PROBE_SECONDS = 100.0
ALLOWANCE = 0.0  # no provisioning allowance, unless a test says otherwise


def _h100_nodes(free: dict[str, int]) -> list[NodeCapacity]:
    return [NodeCapacity(name, "h100", 8, tuple(range(count))) for name, count in free.items()]


def _request(gpus: int, seconds: float) -> Request:
    nodes = 2 if gpus == 16 else 1
    return Request(str(uuid.uuid4()), "h100", gpus // nodes, nodes, seconds)


def test_a_shorter_request_of_the_same_shape_passes_a_longer_one_behind_a_blocked_head():
    # node a free now; node b held for 20 s: the 16-GPU head starts in 20 s on both
    nodes = _h100_nodes({"a": 8, "b": 0})
    holdings = [Holding("b", 8, NOW + 20)]
    head, longer, shorter = _request(16, 60), _request(8, 30), _request(8, 5)

    decisions = plan(nodes, holdings, [head, longer, shorter], NOW, PROBE_SECONDS, ALLOWANCE)

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
        decisions = plan(_h100_nodes(free), holdings, queue, NOW, PROBE_SECONDS, ALLOWANCE)
        granted = {g.reservation_id for g in decisions.grants}
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


def test_a_new_requests_wait_per_type_is_the_eta_a_one_slot_request_would_get():
    # node a full until +30, node b full until +50; a queued 8-GPU head takes a at +30
    nodes = [*_h100_nodes({"a": 0, "b": 0}), NodeCapacity("t", "t4", 4, (0, 1, 2, 3))]
    holdings = [Holding("a", 8, NOW + 30), Holding("b", 8, NOW + 50)]
    head = _request(8, 200)
    decisions = plan(nodes, holdings, [head], NOW, PROBE_SECONDS, ALLOWANCE)
    [wait] = decisions.waits
    assert (wait.reservation_id, wait.eta_seconds) == (head.reservation_id, 30)
    # behind the head, a new 1-GPU request starts when b frees; a t4 starts now
    assert decisions.next_request_waits == {"h100": 50, "t4": 0.0}
    assert decisions.grants == []  # the probe is never granted


def test_the_probe_changes_no_decision_and_a_type_without_nodes_never_fits():
    nodes = _h100_nodes({"a": 8})
    queue = [_request(4, 10), _request(16, 10)]
    with_probe = plan(nodes, [], queue, NOW, PROBE_SECONDS, ALLOWANCE)
    assert [g.reservation_id for g in with_probe.grants] == [queue[0].reservation_id]
    assert [(w.reservation_id, w.position, w.eta_seconds) for w in with_probe.waits] == [
        (queue[1].reservation_id, 1, None)
    ]
    # the 16-GPU head can never fit (one node): it holds nobody back, so a new one starts now
    assert with_probe.next_request_waits == {"h100": 0.0}
    lone = plan(
        [], [], [Request(str(uuid.uuid4()), "b200", 1, 1, 10)], NOW, PROBE_SECONDS, ALLOWANCE
    )
    assert lone.next_request_waits == {"b200": None}


def test_a_grant_holds_its_capacity_until_its_expected_end_as_a_holding_read_back_does():
    # node a free: the first 8-GPU request starts now; the second waits for it to end, and
    # that end is the one a later pass reads back from the grant's row (`expected_end` of
    # the grant time): the provisioning allowance, then the duration
    allowance = 600.0
    first, second = _request(8, 60), _request(8, 60)
    decisions = plan(_h100_nodes({"a": 8}), [], [first, second], NOW, PROBE_SECONDS, allowance)
    assert [g.reservation_id for g in decisions.grants] == [first.reservation_id]
    [wait] = decisions.waits
    assert NOW + wait.eta_seconds == expected_end(NOW, 60, allowance) == NOW + 660
    # the next pass: the grant is a holding read back with the same definition
    later = NOW + 7
    holding = Holding("a", 8, expected_end(NOW, 60, allowance))
    again = plan(_h100_nodes({"a": 0}), [holding], [second], later, PROBE_SECONDS, allowance)
    assert later + again.waits[0].eta_seconds == NOW + wait.eta_seconds


def test_a_parked_request_never_takes_the_node_an_earlier_one_not_parked_yet_needs():
    # one free node; the older request is queued but not parked yet, the newer one parked
    nodes = _h100_nodes({"a": 8})
    older = _request(8, 60)._replace(parked=False)
    newer = _request(8, 60)

    decisions = plan(nodes, [], [older, newer], NOW, PROBE_SECONDS, ALLOWANCE)

    # nobody is granted: the older one starts once it parks (its ETA is now), the newer waits
    assert decisions.grants == []
    assert [(w.reservation_id, w.position, w.eta_seconds) for w in decisions.waits] == [
        (older.reservation_id, 1, 0.0),
        (newer.reservation_id, 2, 60.0),
    ]


def test_once_the_earlier_request_parks_it_is_granted_the_node():
    nodes = _h100_nodes({"a": 8})
    older, newer = _request(8, 60), _request(8, 60)

    decisions = plan(nodes, [], [older, newer], NOW, PROBE_SECONDS, ALLOWANCE)

    assert [g.reservation_id for g in decisions.grants] == [older.reservation_id]


def test_a_later_request_backfills_around_an_earlier_one_not_parked_yet():
    # node a free (the older one's), node b has 4 free: the newer 4-GPU one fits on b only
    nodes = _h100_nodes({"a": 8, "b": 4})
    holdings = [Holding("b", 4, NOW + 100)]
    older = _request(8, 60)._replace(parked=False)
    newer, also = _request(4, 600), _request(4, 600)

    decisions = plan(nodes, holdings, [older, newer, also], NOW, PROBE_SECONDS, ALLOWANCE)

    # the newer one takes b's spare slots; the next would need a: it waits
    assert [g.placements for g in decisions.grants] == [(("b", (0, 1, 2, 3)),)]
    assert decisions.grants[0].reservation_id == newer.reservation_id


def test_requests_not_parked_behind_a_blocked_head_are_never_granted():
    nodes = _h100_nodes({"a": 0, "b": 8})
    holdings = [Holding("a", 8, NOW + 20)]
    head = _request(16, 60)
    short_unparked = _request(1, 5)._replace(parked=False)

    decisions = plan(nodes, holdings, [head, short_unparked], NOW, PROBE_SECONDS, ALLOWANCE)

    assert decisions.grants == []
    assert [w.reservation_id for w in decisions.waits] == [
        head.reservation_id,
        short_unparked.reservation_id,
    ]
