"""While a transient fault lasts, the status line says what the reservation waits for, in
front of what it said; once a task runs through, it says what it said before
(gpudev/lifecycle/outages.py, sql/lifecycle/waiting.sql and outage_over.sql)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import psycopg
from kubernetes.client.exceptions import ApiException

from gpudev.lifecycle.outages import WAITING_PREFIX, outage_over, record_waiting
from gpudev.lifecycle.taxonomy import Transient
from gpudev.models import ReservationStatus
from gpudev.repositories import LifecycleRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from tests.support.submitters import ALICE, RecordingQueue


def _queued(db: psycopg.Connection[Any]) -> Any:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="alice")
    reservation, _ = submit_reservation(db, RecordingQueue(), ALICE, request)
    LifecycleRepository(db).start(reservation.reservation_id, "arn:aws:states:::execution:x")
    return reservation.reservation_id


def _line(db: psycopg.Connection[Any], rid: object) -> str:
    row = db.execute(
        "SELECT current_detailed_status FROM reservations WHERE reservation_id = %s", (rid,)
    ).fetchone()
    assert row is not None
    return str(row[0])


def _connect(db: psycopg.Connection[Any]) -> Any:
    @contextmanager
    def connect() -> Any:
        yield db

    return connect


def _kubernetes_outage() -> Transient:
    error = Transient("ApiException: (503)")
    error.__cause__ = ApiException(status=503, reason="Service Unavailable")
    return error


def test_the_status_line_says_what_it_waits_for_then_what_it_said_before(db):
    rid = _queued(db)
    assert _line(db, rid) == "waiting for capacity"
    line = record_waiting(_connect(db), rid, _kubernetes_outage())
    assert line == "waiting for the Kubernetes API"
    assert _line(db, rid) == "waiting for the Kubernetes API; waiting for capacity"
    # every failed attempt of the outage leaves it as it is; another dependency replaces it
    record_waiting(_connect(db), rid, _kubernetes_outage())
    assert _line(db, rid) == "waiting for the Kubernetes API; waiting for capacity"
    database = Transient("OperationalError")
    database.__cause__ = psycopg.OperationalError("connection refused")
    record_waiting(_connect(db), rid, database)
    assert _line(db, rid) == "waiting for the database; waiting for capacity"
    outage_over(LifecycleRepository(db), rid)
    assert _line(db, rid) == "waiting for capacity"


def test_a_task_that_ran_through_leaves_a_line_without_an_outage_alone(db):
    rid = _queued(db)
    assert LifecycleRepository(db).outage_over(rid, WAITING_PREFIX) is None
    assert _line(db, rid) == "waiting for capacity"


def test_an_ended_reservation_keeps_its_ending_and_a_fault_of_no_dependency_writes_nothing(db):
    rid = _queued(db)
    assert record_waiting(_connect(db), rid, Transient("a row lock")) is None
    assert _line(db, rid) == "waiting for capacity"
    LifecycleRepository(db).end(rid, ReservationStatus.CANCELLED, "cancelled by the user")
    record_waiting(_connect(db), rid, _kubernetes_outage())
    assert _line(db, rid) == "cancelled by the user"


def test_a_database_that_cannot_take_the_line_never_changes_the_tasks_error(db):
    rid = _queued(db)

    @contextmanager
    def refused() -> Any:
        raise psycopg.OperationalError("the database does not allow connections")
        yield db

    assert record_waiting(refused, rid, _kubernetes_outage()) is None
