"""Every state outside the active loop waits out a transient outage of at least
`OUTAGE_LIMIT_MINUTES` (docs/lifecycle.md, "Outages"), and what that costs the execution's
history (25,000 events) is counted here from the ASL.

A retrier's waits, as Step Functions computes them: IntervalSeconds × BackoffRate^n, capped by
MaxDelaySeconds, then a uniform draw in [0, delay] with FULL jitter. An outage is ridden out
when the waits add up to more than it even on an unlucky draw (mean − 4σ). Each attempt of a
Lambda task writes 3 events (TaskScheduled, TaskStarted, TaskFailed); entering and leaving
the state write 2 more."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from gpudev.lifecycle.outages import OUTAGE_LIMIT_MINUTES

ASL = json.loads(
    (Path(__file__).resolve().parents[2] / "statemachines/reservation.asl.json").read_text()
)
STATES: dict[str, Any] = ASL["States"]

HISTORY_EVENTS = 25_000
EVENTS_PER_ATTEMPT = 3  # TaskScheduled, TaskStarted, TaskFailed
EVENTS_PER_STATE = 2  # TaskStateEntered, TaskStateExited

# Submit is the jobs consumer (SQS, not this machine); the active loop re-parks
# (test_state_machine_errors.py). What the save loop's polls cost with an outage on top is
# counted in test_save_loop_history.py.
WAITS_OUT = (
    "Validate request",
    "Wait for capacity",
    "Take the disk",
    "Is the volume available?",
    "Provision",
    "Is the pod ready?",
    "Tear down",
    "Save the disk",
    "Free the disk",
)


def _transient_retrier(state: str) -> dict[str, Any]:
    first = STATES[state]["Retry"][0]
    assert "Transient" in first["ErrorEquals"]
    return first


def _delays(retrier: dict[str, Any]) -> list[float]:
    interval, rate = retrier["IntervalSeconds"], retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", math.inf)
    return [min(cap, interval * rate**n) for n in range(retrier["MaxAttempts"])]


def events_for_an_outage(state: str) -> int:
    """The most events one outage costs `state`: every retry spent (the first attempt and
    MaxAttempts more), then the Catch."""
    attempts = _transient_retrier(state)["MaxAttempts"] + 1
    return EVENTS_PER_STATE + EVENTS_PER_ATTEMPT * attempts


def events_per_minute_of_outage(state: str) -> float:
    """Once the backoff reaches its cap, an attempt every cap/2 seconds on average."""
    cap = _transient_retrier(state)["MaxDelaySeconds"]
    return EVENTS_PER_ATTEMPT * 60 / (cap / 2)


@pytest.mark.parametrize("state", WAITS_OUT)
def test_every_state_waits_out_thirty_minutes_of_outage_even_with_full_jitter(state):
    retrier = _transient_retrier(state)
    assert retrier["JitterStrategy"] == "FULL"  # many reservations at once spread out
    delays = _delays(retrier)
    mean = sum(d / 2 for d in delays)
    sigma = math.sqrt(sum(d * d / 12 for d in delays))
    assert mean - 4 * sigma >= OUTAGE_LIMIT_MINUTES * 60, (mean, sigma)


@pytest.mark.parametrize("state", WAITS_OUT)
def test_the_wait_is_bounded_and_never_more_than_a_minute_after_the_outage_ends(state):
    retrier = _transient_retrier(state)
    assert max(_delays(retrier)) <= 60
    # bounded: it gives up within 90 minutes even if every draw is the longest
    assert sum(_delays(retrier)) <= 90 * 60


@pytest.mark.parametrize("state", WAITS_OUT)
def test_a_permanent_error_is_never_retried_as_an_outage(state):
    assert "Permanent" not in _transient_retrier(state)["ErrorEquals"]
    assert "States.ALL" not in _transient_retrier(state)["ErrorEquals"]


@pytest.mark.parametrize("state", WAITS_OUT)
def test_an_outage_costs_each_state_a_bounded_number_of_events(state):
    assert events_for_an_outage(state) <= 260  # 2 + 3 × 86
    assert events_per_minute_of_outage(state) <= 6


def test_an_outage_in_every_state_of_one_reservation_fits_its_history_many_times_over():
    """A reservation that meets an outage in each of the 9 states, one after the other,
    spends less than a tenth of its history on them (9 × 260 = 2,340)."""
    total = sum(events_for_an_outage(state) for state in WAITS_OUT)
    assert total <= HISTORY_EVENTS // 10, total
