"""Per-user limits at submit: live reservations and GPUs held or queued, checked and
recorded in one statement under the caller's lock, so nothing is written over a limit and
concurrent submits by one user never pass it together."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest

from gpudev.errors import LimitReached
from gpudev.identity import NotAuthorized
from gpudev.models import ReservationStatus, UserLimits
from gpudev.repositories import NewReservation, ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import request_cancel, submit_reservation
from tests.support.counting import CountingConnection
from tests.support.submitters import ALICE, BOB, IMPOSTOR, RecordingQueue


def _request(gpu_type: str = "t4", gpu_count: int = 1, **fields: Any) -> ReservationRequest:
    return ReservationRequest(
        gpu_type=gpu_type, gpu_count=gpu_count, hours=1, **{"github_user": "octocat", **fields}
    )


def _rows(conn: psycopg.Connection[Any], user: str = "alice") -> int:
    row = conn.execute("SELECT count(*) FROM reservations WHERE user_id = %s", (user,)).fetchone()
    assert row is not None
    return int(row[0])


def test_a_request_one_under_the_reservation_limit_is_accepted(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=3, max_gpus=100)
    for _ in range(3):
        _, created = submit_reservation(db, queue, ALICE, _request(), limits)
        assert created
    assert _rows(db) == 3 and len(queue.sent) == 3


def test_at_the_reservation_limit_the_request_is_refused_naming_limit_and_usage(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=2, max_gpus=100)
    for _ in range(2):
        submit_reservation(db, queue, ALICE, _request(), limits)
    with pytest.raises(LimitReached) as refused:
        submit_reservation(db, queue, ALICE, _request(), limits)
    assert refused.value.message == (
        "you have 2 live reservations, the limit is 2; "
        "cancel one with `gpu-dev cancel` or wait for one to end"
    )
    assert _rows(db) == 2 and len(queue.sent) == 2
    # Another user's reservations are theirs alone.
    assert submit_reservation(db, queue, BOB, _request(), limits)[1]


def test_ended_and_cancel_requested_reservations_do_not_count(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=2, max_gpus=100)
    first, _ = submit_reservation(db, queue, ALICE, _request(), limits)
    second, _ = submit_reservation(db, queue, ALICE, _request(), limits)
    request_cancel(db, queue, ALICE, str(first.reservation_id))
    ReservationsRepository(db).set_status(
        second.reservation_id, ReservationStatus.EXPIRED, "expired"
    )
    for _ in range(2):
        assert submit_reservation(db, queue, ALICE, _request(), limits)[1]


def test_the_gpu_limit_counts_multinode_reservations_by_all_their_gpus(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=10, max_gpus=32)
    multinode, _ = submit_reservation(db, queue, ALICE, _request("h100", 16), limits)
    assert multinode.total_nodes == 2
    submit_reservation(db, queue, ALICE, _request("h100", 8), limits)
    submit_reservation(db, queue, ALICE, _request("cpu-x86", 0), limits)  # no GPUs: fits
    with pytest.raises(LimitReached) as refused:
        submit_reservation(db, queue, ALICE, _request("h100", 16), limits)
    assert refused.value.message == (
        "this request needs 16 GPUs and your live reservations already hold or queue 24; "
        "the limit is 32 GPUs per user; cancel one with `gpu-dev cancel` or wait for one to end"
    )
    assert submit_reservation(db, queue, ALICE, _request("h100", 8), limits)[1]  # exactly 32
    with pytest.raises(LimitReached, match="needs 1 GPU and your live reservations already"):
        submit_reservation(db, queue, ALICE, _request("t4", 1), limits)
    assert _rows(db) == 4


def test_a_request_larger_than_the_gpu_limit_alone_says_so(db):
    queue: Any = RecordingQueue()
    with pytest.raises(LimitReached) as refused:
        submit_reservation(db, queue, ALICE, _request("h100", 24), UserLimits(4, 16))
    assert refused.value.message == (
        "this request needs 24 GPUs and the limit is 16 GPUs per user (held or queued); "
        "ask for fewer GPUs"
    )
    assert _rows(db) == 0 and queue.sent == []
    assert db.execute("SELECT count(*) FROM users").fetchone() == (0,)  # not even the user


def test_a_repeated_client_request_id_returns_the_first_reservation_even_at_the_limit(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=1, max_gpus=100)
    request = _request(client_request_id=uuid.uuid4().hex)
    first, created = submit_reservation(db, queue, ALICE, request, limits)
    again, created_again = submit_reservation(db, queue, ALICE, request, limits)
    assert (created, created_again) == (True, False)
    assert again == first and len(queue.sent) == 1
    with pytest.raises(LimitReached):
        submit_reservation(db, queue, ALICE, _request(), limits)


def test_a_refusal_takes_three_statements(fresh_database: str):
    """The request lock, the context, the submit (docs/decisions.md, 2026-11-24)."""
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=1, max_gpus=100)
    with psycopg.connect(fresh_database) as raw:
        conn: Any = CountingConnection(raw)
        submit_reservation(conn, queue, ALICE, _request(), limits)
        conn.statements = 0
        with pytest.raises(LimitReached):
            submit_reservation(conn, queue, ALICE, _request(), limits)
        assert conn.statements == 3


def test_concurrent_submits_by_one_user_never_pass_the_limit_together(fresh_database: str):
    limits = UserLimits(max_live_reservations=3, max_gpus=100)
    attempts = 8
    start = threading.Barrier(attempts)
    outcomes: list[str] = []
    queue: Any = RecordingQueue()

    def submit() -> None:
        with psycopg.connect(fresh_database) as conn:
            start.wait()
            try:
                submit_reservation(conn, queue, ALICE, _request(), limits)
                outcomes.append("created")
            except LimitReached:
                outcomes.append("refused")

    threads = [threading.Thread(target=submit) for _ in range(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["created"] * 3 + ["refused"] * 5
    with psycopg.connect(fresh_database) as conn:
        assert _rows(conn) == 3
    assert len(queue.sent) == 3


def _everything(conn: psycopg.Connection[Any]) -> list[Any]:
    return [
        conn.execute(f"SELECT *, ctid FROM {table} ORDER BY 1").fetchall()  # noqa: S608
        for table in ("users", "reservations")
    ]


def test_another_principal_at_the_owners_limit_is_refused_403_not_429_nor_a_repeat(db):
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=1, max_gpus=100)
    request = _request(client_request_id=uuid.uuid4().hex)
    submit_reservation(db, queue, ALICE, request, limits)
    before, sent = _everything(db), len(queue.sent)
    for attempt in (request, _request()):  # alice's repeat, and a new one at her limit
        with pytest.raises(NotAuthorized, match="the username alice belongs to another"):
            submit_reservation(db, queue, IMPOSTOR, attempt, limits)
    assert _everything(db) == before and len(queue.sent) == sent


def test_a_username_bound_by_another_principal_while_the_submit_waits_is_refused(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    """The impostor's context reads the username as unbound; alice's first call (her user
    row and a reservation with the same client request id, at her limit) commits before the
    impostor's submit statement: that statement writes nothing and returns neither alice's
    reservation nor a limit, so the impostor gets 403."""
    queue: Any = RecordingQueue()
    limits = UserLimits(max_live_reservations=1, max_gpus=100)
    request = _request(client_request_id=uuid.uuid4().hex)
    real_context = ReservationsRepository.submit_context

    def context_then_alice_binds(self: ReservationsRepository, *args: Any) -> Any:
        context = real_context(self, *args)
        assert context.bound_principal is None
        with psycopg.connect(fresh_database, autocommit=True) as other:
            ReservationsRepository(other).submit(
                "alice",
                ALICE.principal_arn,
                NewReservation(
                    reservation_id=uuid.uuid4(),
                    user_id="alice",
                    client_request_id=request.client_request_id,
                    gpu_type="t4",
                    gpu_count=1,
                    duration_hours=1,
                ),
                limits,
            )
        return context

    monkeypatch.setattr(ReservationsRepository, "submit_context", context_then_alice_binds)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        with pytest.raises(NotAuthorized, match="the username alice belongs to another"):
            submit_reservation(conn, queue, IMPOSTOR, request, limits)
        users = conn.execute("SELECT username, principal_arn FROM users").fetchall()
        assert users == [("alice", ALICE.principal_arn)]
        assert _rows(conn) == 1
    assert queue.sent == []
