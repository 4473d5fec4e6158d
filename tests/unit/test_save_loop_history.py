"""Saving a disk costs a bounded share of an execution's history (25,000 events): the save
loop of statemachines/reservation.asl.json is walked state by state, its `Save the disk`
task answered by the lifecycle's own backoff (gpudev/lifecycle/patience.py), and every
history event Step Functions writes is counted (a Task state 5: entered, scheduled,
started, succeeded, exited; any other state 2; each failed attempt 3 more: scheduled,
started, failed)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpudev.lifecycle.patience import SavePatience, next_wait, pod_overdue
from gpudev.settings import LifecycleSettings

ROOT = Path(__file__).resolve().parents[2]
STATES: dict[str, dict[str, Any]] = json.loads(
    (ROOT / "statemachines/reservation.asl.json").read_text()
)["States"]
SETTINGS = LifecycleSettings()
PATIENCE = SavePatience(
    SETTINGS.ready_poll_seconds,
    SETTINGS.save_wait_max_seconds,
    SETTINGS.save_patience_seconds,
    SETTINGS.pod_release_patience_seconds,
)
SAVE_RETRIERS: list[dict[str, Any]] = STATES["Save the disk"]["Retry"]
EVENTS_PER_FAILED_ATTEMPT = 3  # TaskScheduled, TaskStarted, TaskFailed
# The save's share of the history: a save that never completes (596 events) plus one poll
# that spends every retry of both its retriers (3 × (85 + 50) = 405), an outage of the
# 30-minute limit and a fault of another kind on top, as test_outage_limit.py counts one
# outage per state. The active loop and the rest keep the other 23,900.
BUDGET = 1_100
TASK_SECONDS = 1.0  # a save_disk call: an EC2 describe or two
FAULT_RETRY_SECONDS = 120  # fault_retry_minutes at 3,600 s an hour
MATH_ADD = re.compile(r"States\.MathAdd\((\$[\w.]+), (-?\d+)\)")


def _get(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.removeprefix("$").split(".")[1:]:
        value = value[part]
    return value


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    parts = path.removeprefix("$.").split(".")
    target = document
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
    return document


def _parameters(template: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in template.items():
        if not key.endswith(".$"):
            out[key] = _parameters(value, document) if isinstance(value, dict) else value
        elif added := MATH_ADD.fullmatch(value):
            out[key[:-2]] = _get(document, added[1]) + int(added[2])
        else:
            out[key[:-2]] = _get(document, value)
    return out


def _matches(rule: dict[str, Any], document: dict[str, Any]) -> bool:
    value = _get(document, rule["Variable"])
    if "StringEquals" in rule:
        return bool(value == rule["StringEquals"])
    return bool(value >= rule["NumericGreaterThanEquals"])


def _retry_seconds(failed: int) -> float:
    """The mean time `failed` attempts of the save's retriers wait (full jitter: half each
    delay), the transient retrier spent first."""
    seconds = 0.0
    for retrier in SAVE_RETRIERS:
        interval, rate = retrier["IntervalSeconds"], retrier.get("BackoffRate", 2.0)
        cap = retrier.get("MaxDelaySeconds", float("inf"))
        spent = min(failed, retrier["MaxAttempts"])
        seconds += sum(min(cap, interval * rate**n) / 2 for n in range(spent))
        failed -= spent
    return seconds


def walk_the_save(
    answer: Callable[[int, float], dict[str, Any]],
) -> tuple[list[str], int, float]:
    """From `Tear down`'s next state until the save loop is left: the states visited, the
    history events they wrote and the seconds that passed. `answer(call, elapsed)` is the
    `save_disk` task's output; with `failed_attempts` in it, the attempts that failed
    before it (past every retrier's attempts the Catch is taken)."""
    document: dict[str, Any] = {"reservation_id": "r", "result": {"status": "cancelled"}}
    name, visited, events, elapsed, calls = STATES["Tear down"]["Next"], [], 0, 0.0, 0
    while name in STATES and name not in ("How did it end?", "Free the disk", "Disk not saved"):
        state = STATES[name]
        visited.append(name)
        kind = state["Type"]
        events += 5 if kind == "Task" else 2
        if kind == "Pass" and ("Result" in state or "Parameters" in state):
            result = state.get("Result") or _parameters(state["Parameters"], document)
            document = _set(document, state["ResultPath"], result)
        elif kind == "Task":
            assert state["Parameters"]["Payload"]["task"] == "save_disk", name
            output = answer(calls, elapsed)
            calls += 1
            failed = output.get("failed_attempts", 0)
            retries = sum(retrier["MaxAttempts"] for retrier in SAVE_RETRIERS)
            events += EVENTS_PER_FAILED_ATTEMPT * min(failed, retries + 1)
            elapsed += TASK_SECONDS * (failed + 1) + _retry_seconds(failed)
            if failed > retries:
                name = state["Catch"][0]["Next"]
                continue
            payload = {"Payload": output}
            document = _set(
                document, state["ResultPath"], _parameters(state["ResultSelector"], payload)
            )
        elif kind == "Wait":
            elapsed += _get(document, state["SecondsPath"])
        elif kind == "Choice":
            chosen = [c["Next"] for c in state["Choices"] if _matches(c, document)]
            name = (chosen or [state["Default"]])[0]
            continue
        name = state["Next"]
        assert events < 25_000, "an unbounded loop"
    return [*visited, name], events, elapsed


def never_done(_call: int, elapsed: float) -> dict[str, Any]:
    """A snapshot that never completes (or a pod that never goes)."""
    outcome, seconds = next_wait(elapsed, PATIENCE)
    return {"outcome": outcome, "seconds": seconds, "detail": "snapshot in progress"}


def test_a_save_that_never_completes_hands_the_disk_to_the_sweeper_within_the_budget():
    visited, events, elapsed = walk_the_save(never_done)

    assert visited[-2:] == ["Disk left to the sweeper", "How did it end?"]
    assert events <= BUDGET, events
    assert elapsed >= SETTINGS.save_patience_seconds, "it waited the whole patience"
    polls = visited.count("Save the disk")
    # The old loop polled every 5 s: 4 h of it is 2,880 polls, 25,920 events.
    assert polls == 66 and events == 596, (polls, events)


def test_snapshots_that_keep_failing_end_the_save_after_10_within_the_budget():
    def failing(_call: int, _elapsed: float) -> dict[str, Any]:
        return {"outcome": "failed", "seconds": FAULT_RETRY_SECONDS, "detail": "failed"}

    visited, events, _ = walk_the_save(failing)

    assert visited[-1] == "Disk not saved"
    assert visited.count("Count the failed snapshot") == 10
    assert events <= BUDGET


@pytest.mark.parametrize("every", [2, 5, 7, 13])
def test_failures_between_long_waits_stay_within_the_budget(every):
    def sometimes_failing(call: int, elapsed: float) -> dict[str, Any]:
        if call % every == every - 1:
            return {"outcome": "failed", "seconds": FAULT_RETRY_SECONDS, "detail": "failed"}
        return never_done(call, elapsed)

    visited, events, _ = walk_the_save(sometimes_failing)

    assert visited[-1] in ("Disk not saved", "How did it end?")
    assert events <= BUDGET, events


@pytest.mark.parametrize("at_poll", [0, 1, 30, 65])
def test_an_outage_of_the_limit_during_the_save_is_ridden_out_within_the_budget(at_poll):
    """The transient retrier rides out 30 minutes of outage (test_outage_limit.py), and a
    fault of another kind right after spends the second retrier too."""
    transient, any_error = (retrier["MaxAttempts"] for retrier in SAVE_RETRIERS)

    def outage_then_fault(call: int, elapsed: float) -> dict[str, Any]:
        output = never_done(call, elapsed)
        return {**output, "failed_attempts": transient + any_error} if call == at_poll else output

    visited, events, _ = walk_the_save(outage_then_fault)

    assert visited[-2:] == ["Disk left to the sweeper", "How did it end?"]
    assert events <= BUDGET, events


def test_a_fault_past_every_retry_leaves_the_disk_not_saved_within_the_budget():
    retries = sum(retrier["MaxAttempts"] for retrier in SAVE_RETRIERS)

    def endless(call: int, elapsed: float) -> dict[str, Any]:
        output = never_done(call, elapsed)
        return {**output, "failed_attempts": retries + 1} if call == 65 else output

    visited, events, _ = walk_the_save(endless)

    assert visited[-1] == "Disk not saved"
    assert events <= BUDGET, events


def test_the_save_waits_out_an_outage_like_every_other_state():
    transient = SAVE_RETRIERS[0]
    assert "Transient" in transient["ErrorEquals"]
    assert transient["MaxAttempts"] == STATES["Take the disk"]["Retry"][0]["MaxAttempts"]
    assert transient["MaxDelaySeconds"] == 60 and transient["JitterStrategy"] == "FULL"


def test_a_save_that_completes_goes_on_to_free_the_disk():
    def saved_at_third(call: int, elapsed: float) -> dict[str, Any]:
        if call == 2:
            return {"outcome": "saved", "seconds": 5}
        return never_done(call, elapsed)

    visited, _events, elapsed = walk_the_save(saved_at_third)

    assert visited[-1] == "Free the disk" and visited.count("Save the disk") == 3
    assert elapsed < 30, "the first polls are not slowed: most saves finish in seconds"


# -- the backoff itself ----------------------------------------------------------------------


def test_the_waits_start_at_the_poll_grow_geometrically_and_stop_at_the_cap():
    waits = [next_wait(elapsed, PATIENCE)[1] for elapsed in (0, 10, 20, 40, 100, 1_000, 10_000)]
    assert waits == [5, 5, 5, 10, 25, 250, 300]
    assert all(a <= b for a, b in itertools.pairwise(waits))


def test_the_save_hands_off_once_the_patience_is_over_and_not_before():
    assert next_wait(PATIENCE.patience_seconds - 1, PATIENCE)[0] == "waiting"
    assert next_wait(PATIENCE.patience_seconds, PATIENCE) == ("handoff", 0)


def test_a_clock_behind_the_end_waits_the_base():
    assert next_wait(-30, PATIENCE) == ("waiting", PATIENCE.base_seconds)


def test_a_pod_is_let_go_by_force_only_after_its_patience():
    assert not pod_overdue(PATIENCE.pod_patience_seconds - 1, PATIENCE)
    assert pod_overdue(PATIENCE.pod_patience_seconds, PATIENCE)
