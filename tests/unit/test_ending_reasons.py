"""Every ending says why (issue #28 item 4): each way the reservation state machine reaches
`Tear down` (a Pass state that sets `$.ending`), each ending the sweeper plans and the
allocator's, gives a non-empty, readable reason, even when the task it came from said
nothing. The database refuses an ending without one (tests/integration/test_ending_reasons.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from gpudev.lifecycle.payloads import Ending, StepFunctionsFailure
from gpudev.lifecycle.teardown import ENDINGS, NO_REASON, final_status
from gpudev.models import FINAL_STATUSES, ReservationStatus
from gpudev.repositories.sweeper import LiveRow
from gpudev.sweeper.plan import EXECUTION_MISSING, Limits, dead_execution_reason, plan_sweep

ROOT = Path(__file__).resolve().parents[2]
STATES: dict[str, dict[str, Any]] = json.loads(
    (ROOT / "statemachines/reservation.asl.json").read_text()
)["States"]
ENDING_STATES = {
    name: {**state.get("Result", {}), **state.get("Parameters", {})}
    for name, state in STATES.items()
    if state["Type"] == "Pass" and state.get("ResultPath") == "$.ending"
}
QUEUE_TIMEOUT_HOURS = 48.0


def assert_readable(reason: str) -> None:
    assert reason == reason.strip() and reason, reason
    assert reason[0].isalpha() and "None" not in reason and "{" not in reason, reason
    assert len(reason) < 600 and "\n" not in reason, reason


def _what_the_task_said(ending: dict[str, Any], said: Any) -> Ending:
    """The Ending the Pass state builds when the path it reads holds `said`."""
    built: dict[str, Any] = {}
    for key, value in ending.items():
        if key == "reason.$":
            built["reason"] = said
        elif key == "error.$":
            built["error"] = said
        else:
            built[key] = value
    return Ending.model_validate(built)


def test_the_state_machine_reaches_tear_down_only_through_the_endings_named_here():
    # A new way to end is a new Pass state: it must be walked by the tests below.
    assert set(ENDING_STATES) == {
        "Cancel requested",
        "Stale in queue",
        "Expiry due",
        "Pod lost",
        "Idle reclaim",
        "Ended elsewhere",
        "Not ready in time",
        "Record the failure",
        "Disk held by another reservation",
        "Volume failed",
        "Provision refused",
        "Build failed",
    }


@pytest.mark.parametrize("state_name", sorted(ENDING_STATES))
@pytest.mark.parametrize(
    "said",
    [None, "", "  ", "the pod was not ready in time: its disk's volume could not be attached"],
    ids=["null", "empty", "blank", "a reason"],
)
def test_every_ending_of_the_state_machine_records_a_readable_reason(state_name, said):
    state = ENDING_STATES[state_name]
    if "error.$" in state:  # a Catch's error: with or without a cause, or nothing at all
        said = None if said is None else StepFunctionsFailure(Error="Permanent", Cause=said)
    status, reason = final_status(_what_the_task_said(state, said), QUEUE_TIMEOUT_HOURS)
    assert status in FINAL_STATUSES
    assert_readable(reason)


def test_each_kind_of_ending_says_its_own_why():
    def reason(**ending: Any) -> str:
        return final_status(Ending.model_validate(ending), QUEUE_TIMEOUT_HOURS)[1]

    assert reason(kind="expire") == "expired: its reserved time ran out"
    assert reason(kind="expire", reason="idle for 2 h") == "expired: idle for 2 h"
    assert reason(kind="expire", reason=" ") == "expired: its reserved time ran out"
    assert reason(kind="cancel") == "cancelled by the user"
    assert reason(kind="stale") == (
        "stale: waited 48 h in the queue without getting capacity (the queue timeout)"
    )
    assert reason(kind="failed") == NO_REASON
    lambda_cause = json.dumps({"errorMessage": "KubernetesUnavailable: create_namespaced_pod"})
    assert reason(kind="failed", error={"Error": "Transient", "Cause": lambda_cause}) == (
        "Transient: KubernetesUnavailable: create_namespaced_pod"
    )
    assert set(ENDINGS) | {"failed"} == {"expire", "cancel", "stale", "failed"}


def _row(status: ReservationStatus, **fields: Any) -> LiveRow:
    now = datetime(2026, 11, 27, tzinfo=UTC)
    values: dict[str, Any] = {
        "reservation_id": uuid4(),
        "user_id": "alice",
        "status": status,
        "execution_arn": None,
        "created_at": now - timedelta(hours=1),
        "cancel_requested_at": None,
        "create_job_resends": 0,
        "create_job_resent_at": None,
        "read_at": now,
        **fields,
    }
    return LiveRow(**values)


def test_every_ending_the_sweeper_plans_has_a_readable_reason():
    limits = Limits(pending_after_seconds=60, max_create_resends=3)
    rows = [
        _row(ReservationStatus.ACTIVE, execution_arn="arn:dead"),
        _row(ReservationStatus.QUEUED, execution_arn="arn:gone"),
        _row(ReservationStatus.PENDING, cancel_requested_at=datetime(2026, 11, 26, tzinfo=UTC)),
        _row(ReservationStatus.PENDING, create_job_resends=limits.max_create_resends),
    ]
    plan = plan_sweep(
        rows,
        {"arn:dead": "FAILED", "arn:gone": EXECUTION_MISSING},
        [],
        limits,
        listed_at=datetime(2026, 11, 27, tzinfo=UTC),
    )
    assert len(plan.ends) == len(rows)
    for end in plan.ends:
        assert end.status in FINAL_STATUSES
        assert_readable(end.reason)
    for status in ("FAILED", "TIMED_OUT", "ABORTED", EXECUTION_MISSING):
        assert_readable(dead_execution_reason(status))
