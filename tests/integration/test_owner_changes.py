"""The owner's changes to a reservation share one statement (sql/reservations/change.sql):
each writes only the column it asks for, bumps the generation once and writes one job; a
change that changes nothing, or reaches an ended reservation, writes nothing."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg

from gpudev.repositories import ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from tests.support.databases import queued_changes
from tests.support.submitters import ALICE, RecordingQueue

COLUMNS_CHANGES_WRITE = (
    "SELECT duration_hours, extension_error, secondary_users, jupyter_enabled,"
    " change_generation FROM reservations WHERE reservation_id = %s"
)


def _reservation(db: psycopg.Connection[Any]) -> UUID:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=2, github_user="octocat")
    created, _ = submit_reservation(db, RecordingQueue(), ALICE, request)  # type: ignore[arg-type]
    # a previous extension failed: only the next extension clears its error
    db.execute(
        "UPDATE reservations SET extension_error = 'over 48 h', secondary_users = '{Octo-Cat}'"
        " WHERE reservation_id = %s",
        (created.reservation_id,),
    )
    return created.reservation_id


def _columns(db: psycopg.Connection[Any], rid: UUID) -> tuple[Any, ...]:
    row = db.execute(COLUMNS_CHANGES_WRITE, (rid,)).fetchone()
    assert row is not None
    return tuple(row)


def test_each_change_writes_only_its_own_column(db: psycopg.Connection[Any]):
    repo = ReservationsRepository(db)
    rid = _reservation(db)
    assert _columns(db, rid) == (2.0, "over 48 h", ["Octo-Cat"], False, 0)

    assert repo.set_jupyter(rid, True) is not None
    assert _columns(db, rid) == (2.0, "over 48 h", ["Octo-Cat"], True, 1)

    assert repo.add_user(rid, "mona") is not None
    assert _columns(db, rid) == (2.0, "over 48 h", ["Octo-Cat", "mona"], True, 2)

    changed = repo.extend(rid, 3)
    assert changed is not None and changed.row.change_generation == 3
    assert _columns(db, rid) == (5.0, None, ["Octo-Cat", "mona"], True, 3)
    assert queued_changes(db, rid) == 3

    assert repo.add_user(rid, "hubot") is not None
    removed = repo.remove_user(rid, "octo-cat")  # logins ignore case; the order is kept
    assert removed is not None and removed.row.secondary_users == ["mona", "hubot"]
    assert _columns(db, rid) == (5.0, None, ["mona", "hubot"], True, 5)
    assert queued_changes(db, rid) == 5


def test_a_change_that_changes_nothing_writes_nothing(db: psycopg.Connection[Any]):
    repo = ReservationsRepository(db)
    rid = _reservation(db)
    before = _columns(db, rid)

    assert repo.set_jupyter(rid, False) is None  # already off
    assert repo.add_user(rid, "octo-cat") is None  # Octo-Cat is there: logins ignore case
    assert repo.remove_user(rid, "mona") is None  # not there: nothing to remove

    assert _columns(db, rid) == before
    assert queued_changes(db, rid) == 0


def test_no_change_reaches_an_ended_reservation(db: psycopg.Connection[Any]):
    repo = ReservationsRepository(db)
    rid = _reservation(db)
    db.execute(
        "UPDATE reservations SET failure_reason = 'ended by a test',"
        " status = 'expired', reservation_ended = now()"
        " WHERE reservation_id = %s",
        (rid,),
    )
    before = _columns(db, rid)

    assert repo.extend(rid, 1) is None
    assert repo.add_user(rid, "mona") is None
    assert repo.remove_user(rid, "Octo-Cat") is None
    assert repo.set_jupyter(rid, True) is None

    assert _columns(db, rid) == before
    assert queued_changes(db, rid) == 0
