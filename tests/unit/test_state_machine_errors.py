"""The reservation state machine and the task errors agree: every Task state retries the
transient names for minutes with jitter, re-runs on StateChanged, and only names errors the
tasks raise or Step Functions and Lambda define; an active reservation survives a transient
fault; the local cloud compresses retry waits with its clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpudev.lifecycle.taxonomy import ERROR_NAMES
from localcloud.deploy import compress_retries
from localcloud.options import Options

ROOT = Path(__file__).resolve().parents[2]
ASL_TEXT = (ROOT / "statemachines/reservation.asl.json").read_text()
ASL = json.loads(ASL_TEXT)
STATES: dict[str, Any] = ASL["States"]
TASKS = {name: state for name, state in STATES.items() if state["Type"] == "Task"}

TRANSIENT = {
    "Transient",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
    "Sandbox.Timedout",
}
CHECKPOINT = "Checkpoint: warnings, changes, expiry"
PARK = "Active until the next checkpoint"


def _longest_total_wait(retrier: dict[str, Any]) -> float:
    interval, rate = retrier["IntervalSeconds"], retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return sum(min(cap, interval * rate**n) for n in range(retrier["MaxAttempts"]))


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_retries_the_transient_names_first_for_minutes_with_jitter(name):
    first = TASKS[name]["Retry"][0]
    assert set(first["ErrorEquals"]) == TRANSIENT
    assert first["JitterStrategy"] == "FULL"
    assert first["MaxDelaySeconds"] <= 60
    assert _longest_total_wait(first) >= 180  # minutes, not seconds


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_runs_again_when_the_row_changed_under_it(name):
    names = [n for retrier in TASKS[name]["Retry"] for n in retrier["ErrorEquals"]]
    assert "StateChanged" in names or "States.ALL" in names


def test_every_error_name_is_ours_or_defined_by_step_functions_or_lambda():
    named = {
        error
        for state in TASKS.values()
        for handler in [*state.get("Retry", []), *state.get("Catch", [])]
        for error in handler["ErrorEquals"]
    }
    foreign = {
        n for n in named if n not in ERROR_NAMES and not n.startswith(("States.", "Lambda."))
    }
    assert foreign == {"Sandbox.Timedout"}


def _catch(state: str, error: str) -> str:
    return next(c["Next"] for c in STATES[state]["Catch"] if error in c["ErrorEquals"])


def test_a_transient_fault_in_the_active_loop_parks_and_checks_again_instead_of_ending():
    again = _catch(CHECKPOINT, "Transient")
    assert STATES[again]["Next"] == PARK
    assert STATES[again]["Parameters"]["detail"]["seconds.$"].startswith("$.start.detail.")
    waited = _catch(PARK, "Transient")
    assert STATES[waited]["Type"] == "Wait" and STATES[waited]["Next"] == CHECKPOINT
    for state in (CHECKPOINT, PARK):
        transient = next(c for c in STATES[state]["Catch"] if "Transient" in c["ErrorEquals"])
        assert set(transient["ErrorEquals"]) == TRANSIENT
        assert _catch(state, "States.ALL") == "Record the failure"  # Permanent ends it


def test_the_local_cloud_compresses_retry_waits_with_its_clock():
    compressed = json.loads(compress_retries(ASL_TEXT, 36 / 3600))
    for name in TASKS:
        for retrier in compressed["States"][name]["Retry"]:
            assert retrier["IntervalSeconds"] == 1 and retrier["MaxDelaySeconds"] == 1
    assert compress_retries(ASL_TEXT, 1.0) == ASL_TEXT
    half = json.loads(compress_retries(ASL_TEXT, 0.5))["States"][CHECKPOINT]["Retry"][0]
    assert (half["IntervalSeconds"], half["MaxDelaySeconds"]) == (1, 30)


def test_a_cloud_riding_out_real_length_outages_keeps_its_retries_on_the_real_clock():
    """bench/soak.py --outages: the outages last real seconds, so the retries wait as in
    AWS while the rest of the lifecycle keeps its compressed clock."""
    assert Options(seconds_per_hour=36).retry_scale == 36 / 3600
    real = Options(seconds_per_hour=36, retry_seconds_per_hour=3600)
    assert real.retry_scale == 1.0
    assert compress_retries(ASL_TEXT, real.retry_scale) == ASL_TEXT
