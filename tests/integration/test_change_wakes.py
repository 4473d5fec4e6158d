"""Changes wake a reservation's execution at most once per bound (lifecycle/wakes.py,
migration 0028): the jobs consumer wakes an active execution for the first change and
leaves the ones within the bound to the checkpoint due by then; a cancel always wakes;
parking wakes itself for a change only past the bound. Against real PostgreSQL, with Step
Functions' task tokens as they behave (a token is woken once)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.jobs import CancelReservationJob, ReservationChangedJob
from gpudev.lifecycle.active import wait_while_active
from gpudev.lifecycle.consumer import JobConsumer
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.payloads import WaitWhileActive
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.repositories import ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from gpudev.settings import LifecycleSettings
from gpudev.signals import Signals
from tests.support.submitters import ALICE, RecordingQueue

BOUND_SECONDS = 180.0
SETTINGS = LifecycleSettings(change_wake_minutes=3)  # 180 s at 3600 s an hour


@dataclass
class TaskTokens:
    """Step Functions' SendTaskSuccess: a token succeeds once, then is closed."""

    woken: list[str] = field(default_factory=list)

    def send_task_success(self, taskToken: str, output: str) -> dict[str, Any]:
        if taskToken in self.woken:
            raise ClientError(
                {"Error": {"Code": "TaskTimedOut", "Message": "closed"}}, "SendTaskSuccess"
            )
        json.loads(output)
        self.woken.append(taskToken)
        return {}


def _active(conn: psycopg.Connection[Any], token: str) -> uuid.UUID:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="octocat")
    created, _ = submit_reservation(conn, RecordingQueue(), ALICE, request)  # type: ignore[arg-type]
    conn.execute(
        "UPDATE reservations SET status = 'active', task_token = %s WHERE reservation_id = %s",
        (token, created.reservation_id),
    )
    return created.reservation_id


def _change(conn: psycopg.Connection[Any], rid: uuid.UUID, token: str) -> ReservationChangedJob:
    """A Jupyter toggle committed, the execution parked on `token` since its last wake."""
    row = ReservationsRepository(conn).get(rid)
    assert row is not None
    changed = ReservationsRepository(conn).set_jupyter(rid, not row.jupyter_enabled)
    assert changed is not None
    conn.execute("UPDATE reservations SET task_token = %s WHERE reservation_id = %s", (token, rid))
    return ReservationChangedJob(
        reservation_id=rid, user_id="alice", change_generation=changed.row.change_generation
    )


def _age_last_wake(conn: psycopg.Connection[Any], rid: uuid.UUID, seconds: float) -> None:
    conn.execute(
        "UPDATE change_wakes SET woken_at = now() - make_interval(secs => %s)"
        " WHERE reservation_id = %s",
        (seconds, rid),
    )


def test_a_storm_of_changes_wakes_the_execution_once_per_bound(conn: psycopg.Connection[Any]):
    tokens = TaskTokens()
    consumer = JobConsumer(conn, tokens, "arn:aws:states:::stateMachine:r", BOUND_SECONDS)
    rid = _active(conn, "t0")
    assert consumer.handle(_change(conn, rid, "t0")) == "woken"
    outcomes = [consumer.handle(_change(conn, rid, f"t{n}")) for n in range(1, 51)]
    assert set(outcomes) == {"coalesced: the checkpoint due within the bound applies it"}
    assert tokens.woken == ["t0"]
    _age_last_wake(conn, rid, BOUND_SECONDS)  # the bound is over
    assert consumer.handle(_change(conn, rid, "t51")) == "woken"
    assert consumer.handle(_change(conn, rid, "t52")).startswith("coalesced")
    assert tokens.woken == ["t0", "t51"]


def test_a_cancel_wakes_the_execution_within_the_bound(conn: psycopg.Connection[Any]):
    tokens = TaskTokens()
    consumer = JobConsumer(conn, tokens, "arn:aws:states:::stateMachine:r", BOUND_SECONDS)
    rid = _active(conn, "t0")
    assert consumer.handle(_change(conn, rid, "t0")) == "woken"
    conn.execute("UPDATE reservations SET task_token = 't1' WHERE reservation_id = %s", (rid,))
    assert ReservationsRepository(conn).request_cancel(rid) is not None
    assert consumer.handle(CancelReservationJob(reservation_id=rid, user_id="alice")) == "woken"
    assert tokens.woken == ["t0", "t1"]


def test_a_change_sent_to_a_closed_token_is_not_counted_as_a_wake(
    conn: psycopg.Connection[Any],
):
    tokens = TaskTokens(woken=["t0"])  # the execution is between steps on a used token
    consumer = JobConsumer(conn, tokens, "arn:aws:states:::stateMachine:r", BOUND_SECONDS)
    rid = _active(conn, "t0")
    assert consumer.handle(_change(conn, rid, "t0")).startswith("token closed")
    assert conn.execute("SELECT count(*) FROM change_wakes").fetchone() == (0,)
    assert consumer.handle(_change(conn, rid, "t1")) == "woken"  # parked again: woken


def _lifecycle(conn: psycopg.Connection[Any], tokens: TaskTokens) -> Lifecycle:
    return Lifecycle(
        conn, None, Signals(tokens), GithubKeys(), SETTINGS, "gpu-dev", "gpu-dev-profiling"
    )


def test_parking_wakes_itself_for_a_change_only_past_the_bound(conn: psycopg.Connection[Any]):
    tokens = TaskTokens()
    lifecycle = _lifecycle(conn, tokens)
    rid = _active(conn, "t0")
    consumer = JobConsumer(conn, tokens, "arn:aws:states:::stateMachine:r", BOUND_SECONDS)
    assert consumer.handle(_change(conn, rid, "t0")) == "woken"
    _change(conn, rid, "t0")  # arrives while the checkpoint runs: no token to wake
    wait_while_active(lifecycle, WaitWhileActive(reservation_id=rid, task_token="t1"))
    assert tokens.woken == ["t0"], "within the bound: the checkpoint due by then applies it"
    _age_last_wake(conn, rid, BOUND_SECONDS)
    wait_while_active(lifecycle, WaitWhileActive(reservation_id=rid, task_token="t2"))
    assert tokens.woken == ["t0", "t2"]


def test_parking_wakes_itself_for_a_cancel_within_the_bound(conn: psycopg.Connection[Any]):
    tokens = TaskTokens()
    lifecycle = _lifecycle(conn, tokens)
    rid = _active(conn, "t0")
    consumer = JobConsumer(conn, tokens, "arn:aws:states:::stateMachine:r", BOUND_SECONDS)
    assert consumer.handle(_change(conn, rid, "t0")) == "woken"
    assert ReservationsRepository(conn).request_cancel(rid) is not None
    wait_while_active(lifecycle, WaitWhileActive(reservation_id=rid, task_token="t1"))
    assert tokens.woken == ["t0", "t1"]
