"""A submit naming a disk and a rename or delete of that disk, at once, on two connections:
both take the caller's request lock first (users/request_lock.sql), so the second waits
for the first to commit and then sees what it did; they never both pass their checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from gpudev.disks.requests import DiskRequest, RenameRequest, create_disk, delete_disk, rename_disk
from gpudev.errors import Conflict, InvalidRequest
from gpudev.repositories import DisksRepository, ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from tests.support.submitters import ALICE, RecordingQueue

QUEUE: Any = RecordingQueue()


def _submit(conn: psycopg.Connection[Any]) -> None:
    request = ReservationRequest(
        gpu_type="t4", gpu_count=1, hours=1, github_user="octocat", disk_name="work"
    )
    submit_reservation(conn, QUEUE, ALICE, request)


def _rename(conn: psycopg.Connection[Any]) -> None:
    rename_disk(conn, QUEUE, ALICE, "work", RenameRequest(new_name="other"))  # type: ignore[arg-type]


def _delete(conn: psycopg.Connection[Any]) -> None:
    delete_disk(conn, QUEUE, ALICE, "work")


def _paused_after(monkeypatch: pytest.MonkeyPatch, owner: Any, method: str) -> threading.Event:
    """`owner.method` writes, then waits (its transaction open, the lock held) until the
    returned event is set."""
    go = threading.Event()
    real = getattr(owner, method)

    def paused(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(self, *args, **kwargs)
        assert go.wait(20), "the test never let the first request commit"
        return result

    monkeypatch.setattr(owner, method, paused)
    return go


def _waiting_for_the_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return bool(row and row[0])


def _race(
    url: str, first: Callable[[psycopg.Connection[Any]], None], second: Any, go: threading.Event
) -> BaseException | None:
    """`first` runs on its own connection and pauses inside its transaction; `second` on
    another must then block on the lock; once `first` commits, `second` ends: its error."""
    outcome: dict[str, BaseException | None] = {}

    def run(name: str, request: Callable[[psycopg.Connection[Any]], None]) -> None:
        with psycopg.connect(url) as conn:
            try:
                request(conn)
                outcome[name] = None
            except Exception as exc:
                outcome[name] = exc

    first_thread = threading.Thread(target=run, args=("first", first))
    first_thread.start()
    second_thread = threading.Thread(target=run, args=("second", second))
    time.sleep(0.3)  # the first is paused inside its transaction
    second_thread.start()
    deadline = time.monotonic() + 10
    while not _waiting_for_the_lock(url):
        assert time.monotonic() < deadline, "the second request never waited for the lock"
        assert second_thread.is_alive(), f"the second did not wait: {outcome}"
        time.sleep(0.05)
    go.set()
    first_thread.join(20)
    second_thread.join(20)
    assert outcome["first"] is None, outcome
    return outcome["second"]


@pytest.fixture
def work(autocommit_conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    create_disk(autocommit_conn, QUEUE, ALICE, DiskRequest(disk_name="work"))  # type: ignore[arg-type]
    return autocommit_conn


def _reservations_naming(conn: psycopg.Connection[Any], name: str) -> int:
    row = conn.execute("SELECT count(*) FROM reservations WHERE disk_name = %s", (name,)).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("disk_request", [_rename, _delete], ids=["rename", "delete"])
def test_a_disk_request_waits_for_a_submit_naming_the_disk_and_is_refused(
    work: psycopg.Connection[Any],
    fresh_database: str,
    monkeypatch: pytest.MonkeyPatch,
    disk_request: Callable[[psycopg.Connection[Any]], None],
):
    go = _paused_after(monkeypatch, ReservationsRepository, "submit")
    refused = _race(fresh_database, _submit, disk_request, go)
    assert isinstance(refused, Conflict)
    assert "it is in use by reservation" in refused.message
    disk = DisksRepository(work).get("alice", "work")
    assert disk is not None and not disk.is_deleted, "the disk is as it was"
    assert _reservations_naming(work, "work") == 1


def test_a_submit_waits_for_a_rename_of_its_disk_and_is_refused(
    work: psycopg.Connection[Any], fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    go = _paused_after(monkeypatch, DisksRepository, "rename")
    refused = _race(fresh_database, _rename, _submit, go)
    assert isinstance(refused, InvalidRequest)
    assert "you have no disk named" in refused.message
    assert _reservations_naming(work, "work") == 0 and _reservations_naming(work, "other") == 0
    assert DisksRepository(work).get("alice", "other") is not None
