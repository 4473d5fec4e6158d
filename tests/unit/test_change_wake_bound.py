"""The bound on change wakes (gpudev/lifecycle/wakes.py), and the figure it is chosen for: an
execution's history of 25,000 events is never filled by changes, however many a user sends."""

from __future__ import annotations

from gpudev.lifecycle.wakes import coalesced, park_seconds
from gpudev.settings import LifecycleSettings

BOUND = 180.0


def test_a_change_is_coalesced_only_within_the_bound_of_the_last_wake():
    assert not coalesced(None, BOUND), "never woken: wake"
    assert coalesced(0.0, BOUND) and coalesced(179.9, BOUND)
    assert not coalesced(180.0, BOUND)


def test_a_checkpoint_that_applied_a_change_parks_no_longer_than_the_bound():
    assert park_seconds(3_600, applied=True, seconds_since=None, bound_seconds=BOUND) == 180
    assert park_seconds(60, applied=True, seconds_since=None, bound_seconds=BOUND) == 60


def test_a_checkpoint_within_the_bound_of_a_wake_parks_until_the_bound_is_over():
    assert park_seconds(3_600, applied=False, seconds_since=100.5, bound_seconds=BOUND) == 80
    assert park_seconds(3_600, applied=False, seconds_since=179.9, bound_seconds=BOUND) == 1


def test_a_checkpoint_past_the_bound_parks_until_its_warning_or_expiry():
    assert park_seconds(3_600, applied=False, seconds_since=None, bound_seconds=BOUND) == 3_600
    assert park_seconds(3_600, applied=False, seconds_since=500, bound_seconds=BOUND) == 3_600


# A wake of an active execution: the checkpoint (Lambda task: entered, scheduled, started,
# succeeded, exited), its Choice (entered, exited) and the park (.waitForTaskToken task:
# entered, scheduled, started, submitted, succeeded or timed out, exited).
EVENTS_PER_CYCLE = 5 + 2 + 6
HISTORY_EVENTS = 25_000
LONGEST_ACTIVE_HOURS = 48  # reservations_total_hours_check
# `Is the pod ready?` polled every 5 s for up to 600 s (task 5 + choice 2 + wait 2 events),
# warnings (3 per extension, at most 47 extensions of an hour) and the rest (queue,
# provision, tear down, disk) with room to spare.
OTHER_EVENTS = (600 // 5) * 9 + 47 * 3 * EVENTS_PER_CYCLE + 500


def test_the_default_bound_keeps_the_longest_reservation_within_its_history():
    bound_minutes = LifecycleSettings().change_wake_minutes
    # at most one change-driven cycle per bound: a wake, or the follow-up checkpoint
    cycles = LONGEST_ACTIVE_HOURS * 60 / bound_minutes
    assert cycles * EVENTS_PER_CYCLE + OTHER_EVENTS < HISTORY_EVENTS
