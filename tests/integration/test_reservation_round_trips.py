"""The API's reservation and disk calls stay within three SQL round trips (on an autocommit
connection, as the API gives them: the delete of a sent job's outbox row is one of the three)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from gpudev.callers import bound_user
from gpudev.disks.requests import (
    caller_disks,
    create_disk,
    delete_disk,
    find_disk,
    rename_disk,
)
from gpudev.disks.schemas import DiskRequest, RenameRequest
from gpudev.identity import NotAuthorized
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import (
    add_user,
    caller_reservations,
    find_reservation,
    remove_user,
    request_cancel,
    request_extension,
    set_jupyter,
    submit_reservation,
)
from tests.support.counting import CountingConnection
from tests.support.submitters import ALICE, IMPOSTOR, RecordingQueue


def test_create_repeat_and_lookup_take_at_most_four_statements(fresh_database: str):
    """A create: the request lock, the context, the submit, the outbox delete after commit
    (docs/decisions.md, 2026-11-24 "Review follow-ups")."""
    queue = RecordingQueue()
    request = ReservationRequest(
        gpu_type="t4",
        gpu_count=2,
        hours=1.5,
        client_request_id=uuid.uuid4().hex,
        github_user="octocat",
    )
    with psycopg.connect(fresh_database, autocommit=True) as raw:
        conn: Any = CountingConnection(raw)
        created, was_created = submit_reservation(conn, queue, ALICE, request)  # type: ignore[arg-type]
        assert was_created and conn.statements <= 4
        conn.statements = 0
        again, was_created = submit_reservation(conn, queue, ALICE, request)  # type: ignore[arg-type]
        assert not was_created and again.reservation_id == created.reservation_id
        assert conn.statements <= 3
        conn.statements = 0
        assert find_reservation(conn, ALICE, str(created.reservation_id)[:8]) == created
        assert conn.statements == 1
    assert [job.reservation_id for job in queue.sent] == [created.reservation_id]


def test_changes_and_disk_requests_take_at_most_three_statements(fresh_database: str):
    """Three each; a disk rename or delete four (the request lock first)."""
    queue: Any = RecordingQueue()
    with psycopg.connect(fresh_database, autocommit=True) as raw:
        conn: Any = CountingConnection(raw)
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))
        request = ReservationRequest(
            gpu_type="t4", gpu_count=1, hours=1, disk_name="data", github_user="octocat"
        )
        created, _ = submit_reservation(conn, queue, ALICE, request)
        rid = str(created.reservation_id)
        # a disk no live reservation names: "data" cannot be renamed or deleted while one does
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="scratch"))
        calls = [
            lambda: request_extension(conn, queue, ALICE, rid, 2),
            lambda: add_user(conn, queue, ALICE, rid, "octocat"),
            lambda: add_user(conn, queue, ALICE, rid, "octocat"),  # repeat: reads it back
            lambda: remove_user(conn, queue, ALICE, rid, "octocat"),
            lambda: set_jupyter(conn, queue, ALICE, rid, enabled=True),
            lambda: request_cancel(conn, queue, ALICE, rid),
        ]
        disk_writes = [
            lambda: rename_disk(conn, queue, ALICE, "scratch", RenameRequest(new_name="notes")),
            lambda: delete_disk(conn, queue, ALICE, "notes"),
        ]
        for call, budget in [(c, 3) for c in calls] + [(c, 4) for c in disk_writes]:
            conn.statements = 0
            call()
            assert conn.statements <= budget
    assert [job.kind for job in queue.sent] == [
        "disk_operation",
        "create_reservation",
        "disk_operation",
        "reservation_changed",
        "reservation_changed",
        "reservation_changed",
        "reservation_changed",
        "cancel_reservation",
        "disk_operation",
        "disk_operation",
    ]


def test_reads_take_at_most_two_statements_including_the_binding(fresh_database: str):
    queue: Any = RecordingQueue()
    with psycopg.connect(fresh_database) as raw:
        conn: Any = CountingConnection(raw)
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))
        for call in [
            lambda: bound_user(conn, ALICE),
            lambda: caller_reservations(conn, ALICE, None, 50, 0),
            lambda: caller_disks(conn, ALICE),
            lambda: find_disk(conn, ALICE, "data"),
        ]:
            conn.statements = 0
            call()
            assert conn.statements <= 2


def _snapshot(conn: psycopg.Connection[Any]) -> list[Any]:
    return [
        conn.execute(f"SELECT *, ctid FROM {table} ORDER BY 1").fetchall()  # noqa: S608
        for table in ("users", "reservations", "disks")
    ]


def test_another_principal_of_the_same_username_is_refused_by_every_service_writing_nothing(
    fresh_database: str,
):
    queue: Any = RecordingQueue()
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))
        created, _ = submit_reservation(
            conn,
            queue,
            ALICE,
            ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="octocat"),
        )
        rid = str(created.reservation_id)
        sent, before = len(queue.sent), _snapshot(conn)
        refused = [
            lambda: bound_user(conn, IMPOSTOR),
            lambda: submit_reservation(
                conn,
                queue,
                IMPOSTOR,
                ReservationRequest(gpu_type="t4", gpu_count=1, hours=1, github_user="octocat"),
            ),
            lambda: caller_reservations(conn, IMPOSTOR, None, 50, 0),
            lambda: find_reservation(conn, IMPOSTOR, rid),
            lambda: request_extension(conn, queue, IMPOSTOR, rid, 1),
            lambda: add_user(conn, queue, IMPOSTOR, rid, "octocat"),
            lambda: remove_user(conn, queue, IMPOSTOR, rid, "octocat"),
            lambda: set_jupyter(conn, queue, IMPOSTOR, rid, enabled=True),
            lambda: request_cancel(conn, queue, IMPOSTOR, rid),
            lambda: caller_disks(conn, IMPOSTOR),
            lambda: find_disk(conn, IMPOSTOR, "data"),
            lambda: create_disk(conn, queue, IMPOSTOR, DiskRequest(disk_name="other")),
            lambda: rename_disk(conn, queue, IMPOSTOR, "data", RenameRequest(new_name="x")),
            lambda: delete_disk(conn, queue, IMPOSTOR, "data"),
        ]
        for call in refused:
            with pytest.raises(NotAuthorized, match="the username alice belongs to another"):
                call()
        assert _snapshot(conn) == before
        assert len(queue.sent) == sent
