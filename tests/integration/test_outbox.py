"""The transactional outbox (gpudev/outbox.py): a job is written with its change in one
statement, sent only after the commit, and a job the API could not send is sent by the
relay; consumers act only on what the committed row says."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest

from gpudev.db.queries import query
from gpudev.jobs import AnyJob, CancelReservationJob, CreateReservationJob, ReservationChangedJob
from gpudev.lifecycle.consumer import JobConsumer
from gpudev.outbox import relay_outbox
from gpudev.repositories import ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import set_jupyter, submit_reservation
from tests.support.submitters import ALICE, RecordingQueue, RefusingQueue


class RecordingStepFunctions:
    """The consumer's boundary: records what it would ask Step Functions to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("start_execution", kwargs))
        return {"executionArn": "arn"}

    def send_task_success(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("send_task_success", kwargs))
        return {}


def _request() -> ReservationRequest:
    return ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="octocat")


def _outbox(conn: psycopg.Connection[Any]) -> list[Any]:
    return [row[0] for row in conn.execute("SELECT payload FROM outbox ORDER BY created_at")]


@pytest.fixture
def conn(fresh_database: str) -> Any:
    with psycopg.connect(fresh_database, autocommit=True) as connection:
        yield connection


def test_the_create_job_is_sent_only_after_the_row_and_its_outbox_row_committed(
    conn: psycopg.Connection[Any], fresh_database: str
):
    seen: list[tuple[int, int]] = []

    def look_from_another_connection(job: AnyJob) -> None:
        with psycopg.connect(fresh_database) as other:
            rows = other.execute("SELECT count(*) FROM reservations").fetchone()
            outbox = other.execute("SELECT count(*) FROM outbox").fetchone()
        assert rows is not None and outbox is not None
        seen.append((rows[0], outbox[0]))

    queue = RecordingQueue(look_from_another_connection)
    created, _ = submit_reservation(conn, queue, ALICE, _request())  # type: ignore[arg-type]
    assert seen == [(1, 1)], "committed, with its outbox row, before the send"
    assert queue.sent == [
        CreateReservationJob(reservation_id=created.reservation_id, user_id="alice")
    ]
    assert _outbox(conn) == [], "the API deletes the row of the job it sent"


def test_a_change_writes_its_job_to_the_outbox_in_the_same_statement(
    db: psycopg.Connection[Any],
):
    created, _ = submit_reservation(db, RecordingQueue(), ALICE, _request())  # type: ignore[arg-type]
    db.execute("DELETE FROM outbox")
    changed = ReservationsRepository(db).set_jupyter(created.reservation_id, True)
    assert changed is not None
    assert changed.job.job == ReservationChangedJob(
        reservation_id=created.reservation_id, user_id="alice", change_generation=1
    )
    assert _outbox(db) == [changed.job.job.model_dump(mode="json")]
    assert ReservationsRepository(db).set_jupyter(created.reservation_id, True) is None
    assert len(_outbox(db)) == 1, "a repeat that changes nothing writes no job"


def test_a_rolled_back_transaction_leaves_no_outbox_row_and_the_relay_sends_nothing(
    conn: psycopg.Connection[Any],
):
    created, _ = submit_reservation(conn, RecordingQueue(), ALICE, _request())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError), conn.transaction():
        assert ReservationsRepository(conn).request_cancel(created.reservation_id) is not None
        raise RuntimeError("the request failed after its statement")
    assert _outbox(conn) == []
    row = ReservationsRepository(conn).get(created.reservation_id)
    assert row is not None and row.cancel_requested_at is None
    relay = RecordingQueue()
    assert relay_outbox(conn, relay, older_than_seconds=0).sent == 0
    assert relay.sent == []


def test_a_send_refused_after_commit_keeps_the_change_and_the_relay_sends_it(
    conn: psycopg.Connection[Any],
):
    refusing = RefusingQueue()
    created, was_created = submit_reservation(conn, refusing, ALICE, _request())  # type: ignore[arg-type]
    changed = set_jupyter(conn, refusing, ALICE, str(created.reservation_id), enabled=True)  # type: ignore[arg-type]
    assert was_created and changed.jupyter_enabled and refusing.tries == 2
    assert [payload["kind"] for payload in _outbox(conn)] == [
        "create_reservation",
        "reservation_changed",
    ]

    relay = RecordingQueue()
    assert relay_outbox(conn, relay, older_than_seconds=3600).sent == 0, "too young yet"
    relayed = relay_outbox(conn, relay, older_than_seconds=0)
    assert (relayed.sent, relayed.refused) == (2, 0)
    assert [job.kind for job in relay.sent] == ["create_reservation", "reservation_changed"]
    assert _outbox(conn) == []


def test_a_relay_refused_again_counts_the_attempt_and_keeps_the_row(
    conn: psycopg.Connection[Any],
):
    submit_reservation(conn, RefusingQueue(), ALICE, _request())  # type: ignore[arg-type]
    relayed = relay_outbox(conn, RefusingQueue(), older_than_seconds=0)  # type: ignore[arg-type]
    assert (relayed.sent, relayed.refused) == (0, 1)
    row = conn.execute("SELECT relay_attempts, last_attempt_at FROM outbox").fetchone()
    assert row is not None and row[0] == 1 and row[1] is not None


def test_the_relay_skips_rows_another_relay_holds(
    conn: psycopg.Connection[Any], fresh_database: str
):
    submit_reservation(conn, RefusingQueue(), ALICE, _request())  # type: ignore[arg-type]
    relay = RecordingQueue()
    with psycopg.connect(fresh_database) as other:
        held = other.execute(
            query("outbox/relay_batch"), {"older_than_seconds": 0, "batch_size": 100}
        ).fetchall()
        assert len(held) == 1
        started = time.monotonic()
        assert relay_outbox(conn, relay, older_than_seconds=0).sent == 0
        assert time.monotonic() - started < 1, "skipped, not waited for"
        other.rollback()
    assert relay_outbox(conn, relay, older_than_seconds=0).sent == 1
    assert [job.kind for job in relay.sent] == ["create_reservation"]


# -- consumers act on the committed row -------------------------------------------------------


def _consumer(db: psycopg.Connection[Any]) -> tuple[JobConsumer, RecordingStepFunctions]:
    stepfunctions = RecordingStepFunctions()
    return JobConsumer(db, stepfunctions, "arn:aws:states:::stateMachine:r"), stepfunctions


def _active_with_token(db: psycopg.Connection[Any]) -> uuid.UUID:
    created, _ = submit_reservation(db, RecordingQueue(), ALICE, _request())  # type: ignore[arg-type]
    db.execute(
        "UPDATE reservations SET status = 'active', task_token = 'token' WHERE reservation_id = %s",
        (created.reservation_id,),
    )
    return created.reservation_id


def test_a_cancel_job_without_a_committed_cancel_request_is_ignored(db: psycopg.Connection[Any]):
    rid = _active_with_token(db)
    consumer, stepfunctions = _consumer(db)
    outcome = consumer.handle(CancelReservationJob(reservation_id=rid, user_id="alice"))
    assert outcome == "no cancel committed: ignored"
    assert stepfunctions.calls == []


def test_a_cancel_job_with_its_cancel_request_committed_wakes_the_execution(
    db: psycopg.Connection[Any],
):
    rid = _active_with_token(db)
    assert ReservationsRepository(db).request_cancel(rid) is not None
    consumer, stepfunctions = _consumer(db)
    assert consumer.handle(CancelReservationJob(reservation_id=rid, user_id="alice")) == "woken"
    assert [name for name, _ in stepfunctions.calls] == ["send_task_success"]


def test_a_change_job_wakes_only_while_a_change_is_not_applied(db: psycopg.Connection[Any]):
    rid = _active_with_token(db)
    consumer, stepfunctions = _consumer(db)
    job = ReservationChangedJob(reservation_id=rid, user_id="alice", change_generation=1)
    assert consumer.handle(job) == "no change to apply", "generation 0 is applied"
    assert ReservationsRepository(db).set_jupyter(rid, True) is not None
    assert consumer.handle(job) == "woken"
    db.execute(
        "UPDATE reservations SET applied_generation = change_generation WHERE reservation_id = %s",
        (rid,),
    )
    assert consumer.handle(job) == "no change to apply", "a duplicate after it was applied"
    assert len(stepfunctions.calls) == 1


def test_a_create_job_without_a_row_is_acknowledged_at_once_without_waiting(
    db: psycopg.Connection[Any],
):
    consumer, stepfunctions = _consumer(db)
    started = time.monotonic()
    job = CreateReservationJob(reservation_id=uuid.uuid4(), user_id="alice")
    assert consumer.handle(job) == "no such reservation: nothing to start"
    assert time.monotonic() - started < 0.5 and stepfunctions.calls == []
