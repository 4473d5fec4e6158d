"""The waits a pass sends (`allocation/rows.changed_waits`): only those whose position or
estimated start differ from what the queue read returned, a start compared to the
microsecond (the recorded one comes as epoch seconds, the plan's as a moment)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpudev.allocation.rows import changed_waits
from gpudev.allocation.values import Decisions, Wait
from gpudev.repositories.allocations import QueueColumns

NOW = datetime(2026, 11, 24, 9, 0, 0, 123456, tzinfo=UTC).timestamp()
ETA = 5400.25  # seconds: the start is NOW + ETA, as the planner's replay finds it
START = datetime.fromtimestamp(NOW + ETA, UTC)
MICROSECOND = timedelta(microseconds=1)


def _queue(recorded: list[tuple[int | None, datetime | None]]) -> QueueColumns:
    n = len(recorded)
    ids = tuple(f"00000000-0000-0000-0000-{i:012d}" for i in range(n))
    return QueueColumns(
        reservation_ids=ids,
        gpu_types=("h100",) * n,
        gpu_counts=(8,) * n,
        total_nodes=(1,) * n,
        duration_hours=(1.0,) * n,
        profiling=(False,) * n,
        parked=(True,) * n,
        queue_positions=tuple(position for position, _ in recorded),
        # as the queue read gives them: epoch seconds (`date_part`)
        estimated_starts=tuple(None if s is None else s.timestamp() for _, s in recorded),
    )


def test_only_the_waits_that_differ_are_sent_a_microsecond_counts():
    queue = _queue(
        [
            (1, START),  # unchanged
            (2, START + MICROSECOND),  # a microsecond later than the plan's: sent
            (3, START - MICROSECOND),  # earlier: sent
            (5, START),  # its position moved: sent
            (5, None),  # never fits, as recorded: unchanged
            (None, None),  # never recorded (a new reservation): sent
            (7, START),  # now never fits: sent
        ]
    )
    ids = queue.reservation_ids
    decisions = Decisions(
        waits=[
            Wait(ids[0], 1, ETA),
            Wait(ids[1], 2, ETA),
            Wait(ids[2], 3, ETA),
            Wait(ids[3], 4, ETA),
            Wait(ids[4], 5, None),
            Wait(ids[5], 6, ETA),
            Wait(ids[6], 7, None),
        ]
    )
    changed = changed_waits(decisions, queue, NOW)
    assert list(changed.reservation_ids) == [ids[1], ids[2], ids[3], ids[5], ids[6]]
    assert list(changed.positions) == [2, 3, 4, 6, 7]
    assert list(changed.starts_at) == [START, START, START, START, None]


def test_nothing_changed_sends_nothing():
    queue = _queue([(1, START), (2, None)])
    ids = queue.reservation_ids
    decisions = Decisions(waits=[Wait(ids[0], 1, ETA), Wait(ids[1], 2, None)])
    changed = changed_waits(decisions, queue, NOW)
    assert (list(changed.reservation_ids), list(changed.positions), list(changed.starts_at)) == (
        [],
        [],
        [],
    )


def test_a_start_is_the_moment_of_now_plus_the_eta_rounded_to_the_microsecond():
    queue = _queue([(None, None)])
    eta = 0.0000004  # under half a microsecond past NOW (a whole microsecond)
    changed = changed_waits(Decisions(waits=[Wait(queue.reservation_ids[0], 1, eta)]), queue, NOW)
    assert list(changed.starts_at) == [datetime.fromtimestamp(NOW + eta, UTC)]
    assert changed.starts_at[0] == datetime.fromtimestamp(NOW, UTC)
