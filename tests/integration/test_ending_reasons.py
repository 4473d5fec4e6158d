"""Every ending says why, down to the database (issue #28 item 4): the one ending statement
(lifecycle/end.sql, used by tear down and the sweeper) and the status change the allocator
uses (reservations/set_status.sql) record the reason in failure_reason and the status line
for every final status, an operator's cancel keeps the operator's words, and a reservation
cannot end without a reason at all: reservations_ending_reason_check refuses it, whatever
the path, and nothing is written."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import errors

from gpudev.errors import InvalidRequest
from gpudev.models import FINAL_STATUSES, ReservationStatus
from gpudev.repositories import LifecycleRepository, ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import record_cancel, submit_reservation
from tests.support.submitters import ALICE, RecordingQueue

FINAL = sorted(FINAL_STATUSES)


def _submitted(db: psycopg.Connection[Any]) -> Any:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="alice")
    reservation, _ = submit_reservation(db, RecordingQueue(), ALICE, request)
    return reservation


def _ending(db: psycopg.Connection[Any], rid: object) -> tuple[Any, ...]:
    row = db.execute(
        "SELECT status, failure_reason, current_detailed_status, reservation_ended IS NOT NULL"
        " FROM reservations WHERE reservation_id = %s",
        (rid,),
    ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.parametrize("status", FINAL)
def test_the_ending_statement_records_the_reason_for_every_final_status(db, status):
    rid = _submitted(db).reservation_id
    LifecycleRepository(db).end(rid, status, f"why it is {status}")
    assert _ending(db, rid) == (status, f"why it is {status}", f"why it is {status}", True)


@pytest.mark.parametrize("status", FINAL)
def test_the_status_change_records_the_reason_for_every_final_status(db, status):
    rid = _submitted(db).reservation_id
    ReservationsRepository(db).set_status(rid, status, f"why it is {status}")
    assert _ending(db, rid) == (status, f"why it is {status}", f"why it is {status}", True)


def test_an_operators_cancel_ends_with_the_operators_words(db):
    reservation = _submitted(db)
    record_cancel(db, RecordingQueue(), reservation, "the node is being replaced; reserve again")
    LifecycleRepository(db).end(
        reservation.reservation_id, ReservationStatus.CANCELLED, "cancelled by the user"
    )
    assert _ending(db, reservation.reservation_id)[1] == (
        "the node is being replaced; reserve again"
    )


@pytest.mark.parametrize("status", FINAL)
@pytest.mark.parametrize("reason", [None, "", "   "], ids=["null", "empty", "blank"])
def test_no_path_can_end_a_reservation_without_a_reason(db, status, reason):
    rid = _submitted(db).reservation_id
    before = _ending(db, rid)
    for end in (
        lambda: LifecycleRepository(db).end(rid, status, reason),  # type: ignore[arg-type]
        lambda: ReservationsRepository(db).set_status(rid, status, reason),
        lambda: db.execute(  # any other writer, by hand
            "UPDATE reservations SET status = %s, reservation_ended = now() "
            "WHERE reservation_id = %s",
            (status, rid),
        ),
    ):
        with pytest.raises((errors.CheckViolation, InvalidRequest)) as refused, db.transaction():
            end()
        violation = refused.value.__cause__ or refused.value  # repositories map it (errors.py)
        assert isinstance(violation, errors.CheckViolation)
        assert violation.diag.constraint_name == "reservations_ending_reason_check"
        assert _ending(db, rid) == before  # nothing written


# The statements of the functions deployed before migration 0031 (main at 2026-11-24): they
# run while the migration applies, and again after a rollback.
PREVIOUS_END = """
UPDATE reservations SET
    status = %(status)s, task_token = NULL, queue_position = NULL, estimated_start_at = NULL,
    current_detailed_status = %(detail)s,
    cancelled_at = CASE WHEN %(status)s = 'cancelled' THEN now() END,
    failed_at = CASE WHEN %(status)s = 'failed' THEN now() END,
    failure_reason = CASE WHEN %(status)s = 'failed' THEN %(detail)s END,
    reservation_ended = now()
WHERE reservation_id = %(reservation_id)s AND status NOT IN ('cancelled', 'expired', 'failed')
"""


@pytest.mark.parametrize("status", ["cancelled", "expired"])
def test_the_previous_functions_endings_keep_working_their_status_line_the_reason(db, status):
    """An upgrade runs the migrations while the previous functions still serve: their cancel
    and expiry write the ending's words to the status line only. Refusing them would fail
    every tear down of the deploy window."""
    rid = _submitted(db).reservation_id
    words = f"{status} by the previous release"
    db.execute(PREVIOUS_END, {"status": status, "detail": words, "reservation_id": rid})
    assert _ending(db, rid)[1] == words
