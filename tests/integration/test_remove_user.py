"""`gpu-dev edit REF --remove-user GH` in the service: an added user comes off the row with
one wake-up job, in any status before the end (like add-user); every refusal says why and
writes nothing: a name GitHub could not have, a user who is not there, an ended reservation,
another user's reservation."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import psycopg
import pytest

from gpudev.errors import Conflict, InvalidRequest, NotFound
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import add_user, remove_user, submit_reservation
from tests.support.databases import queued_changes
from tests.support.submitters import ALICE, BOB, RecordingQueue

ROW = (
    "SELECT secondary_users, change_generation, status FROM reservations WHERE reservation_id = %s"
)


def _with_users(db: psycopg.Connection[Any], queue: Any, *users: str) -> str:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=2, github_user="octocat")
    created, _ = submit_reservation(db, queue, ALICE, request)
    rid = str(created.reservation_id)
    for user in users:
        add_user(db, queue, ALICE, rid, user)
    return rid


def _row(db: psycopg.Connection[Any], rid: str) -> tuple[Any, ...]:
    row = db.execute(ROW, (UUID(rid),)).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.parametrize("status", ["pending", "queued", "preparing", "active"])
def test_an_added_user_comes_off_a_live_reservation_with_one_job(db, status):
    queue: Any = RecordingQueue()
    rid = _with_users(db, queue, "mona", "Hubot")
    db.execute("UPDATE reservations SET status = %s WHERE reservation_id = %s", (status, rid))
    sent = len(queue.sent)

    shown = remove_user(db, queue, ALICE, rid[:8], "hubot")  # logins ignore case
    assert shown.secondary_users == ["mona"]
    assert _row(db, rid)[:2] == (["mona"], 3)
    assert [job.kind for job in queue.sent[sent:]] == ["reservation_changed"]
    assert queue.sent[-1].change_generation == 3


@pytest.mark.parametrize(
    ("user", "error", "message"),
    [
        ("bad name", InvalidRequest, "GitHub username"),
        ("-mona", InvalidRequest, "GitHub username"),
        ("a" * 40, InvalidRequest, "GitHub username"),
        ("octocat", NotFound, "'octocat' is not a user of reservation"),  # the owner
        ("nobody", NotFound, "(added users: mona)"),
    ],
)
def test_a_bad_or_absent_user_is_refused_and_nothing_is_written(db, user, error, message):
    queue: Any = RecordingQueue()
    rid = _with_users(db, queue, "mona")
    before, sent = _row(db, rid), len(queue.sent)
    with pytest.raises(error, match=re.escape(message)):
        remove_user(db, queue, ALICE, rid, user)
    assert _row(db, rid) == before
    assert len(queue.sent) == sent and queued_changes(db, rid) == 0


def test_removing_from_a_reservation_with_no_added_users_says_so(db):
    rid = _with_users(db, RecordingQueue())
    with pytest.raises(NotFound, match=r"is not a user of reservation .* \(added users: none\)"):
        remove_user(db, RecordingQueue(), ALICE, rid, "mona")


def test_an_ended_reservation_is_refused_with_its_status(db):
    queue: Any = RecordingQueue()
    rid = _with_users(db, queue, "mona")
    db.execute(
        "UPDATE reservations SET status = 'expired', failure_reason = 'expired',"
        " reservation_ended = now() WHERE reservation_id = %s",
        (rid,),
    )
    before = _row(db, rid)
    with pytest.raises(Conflict, match=r"cannot remove a user from reservation .*: it is expired"):
        remove_user(db, queue, ALICE, rid, "mona")
    assert _row(db, rid) == before and queued_changes(db, rid) == 0


def test_another_users_reservation_is_not_found(db):
    queue: Any = RecordingQueue()
    rid = _with_users(db, queue, "mona")
    before = _row(db, rid)
    with pytest.raises(NotFound):
        remove_user(db, queue, BOB, rid, "mona")
    assert _row(db, rid) == before
