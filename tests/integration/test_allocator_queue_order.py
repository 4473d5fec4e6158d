"""The queue's order holds for reservations not parked yet (allocation/queue.sql,
gpudev/allocation/plan.py): an earlier reservation that is pending (its execution not started)
or queued before its park keeps its place, so a later parked one never takes the node it
needs; once it parks, the next pass grants it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gpudev.allocation.service import Allocator, AllocatorReport
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals
from tests.support.submitters import ALICE

NODE = Node("h100-0", "h100", True, False, 8)
SETTINGS = LifecycleSettings()


def _insert(conn: psycopg.Connection[Any], created_at: datetime, **more: Any) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    columns = {
        "reservation_id": reservation_id,
        "user_id": "alice",
        "status": "queued",
        "gpu_type": "h100",
        "gpu_count": 8,
        "total_nodes": 1,
        "duration_hours": 4,
        "created_at": created_at,
        "task_token": f"token-{reservation_id}",
        **more,
    }
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    conn.execute(f"INSERT INTO reservations ({names}) VALUES ({marks})", list(columns.values()))  # noqa: S608
    return reservation_id


def _pass(conn: psycopg.Connection[Any], now: datetime) -> AllocatorReport:
    allocator = Allocator(conn, AcceptingSignals(), SETTINGS, clock=now.timestamp)
    return allocator.run([NODE], [], set())  # type: ignore[arg-type]


def _row(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT granted_at IS NOT NULL, queue_position, estimated_start_at,"
        " current_detailed_status FROM reservations WHERE reservation_id = %s",
        (reservation_id,),
    ).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize(
    "not_parked",
    [
        {"status": "queued", "task_token": None},  # its execution started, not parked yet
        {"status": "pending", "task_token": None, "current_detailed_status": "resent"},
    ],
    ids=["queued-before-its-park", "pending"],
)
def test_a_later_parked_reservation_never_takes_the_node_an_earlier_unparked_one_needs(
    fresh_database: str, not_parked: dict[str, Any]
):
    now = datetime.now(UTC)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
            (ALICE.principal_arn,),
        )
        older = _insert(conn, now - timedelta(minutes=2), **not_parked)
        newer = _insert(conn, now - timedelta(minutes=1))

        report = _pass(conn, now)

        # the node is kept for the older one: nobody is granted, the older is first and
        # starts once it parks (its start is now), the newer after the older's 4 hours
        assert report.granted == [] and report.queued == 2
        granted, position, start, status = _row(conn, older)
        assert (granted, position, start) == (False, 1, now)
        if not_parked["status"] == "pending":
            assert status == "resent"  # a pending row keeps its own detailed status
        assert _row(conn, newer)[:2] == (False, 2)

        # it parks (a pending one first starts: queued): the next pass grants it the node
        conn.execute(
            "UPDATE reservations SET status = 'queued', task_token = 'parked'"
            " WHERE reservation_id = %s",
            (older,),
        )
        report = _pass(conn, now + timedelta(seconds=5))
        assert report.granted == [older]
        assert _row(conn, newer)[:2] == (False, 1)


def test_a_cancelled_unparked_reservation_keeps_no_place(fresh_database: str):
    now = datetime.now(UTC)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
            (ALICE.principal_arn,),
        )
        _insert(conn, now - timedelta(minutes=2), task_token=None, cancel_requested_at=now)
        newer = _insert(conn, now - timedelta(minutes=1))

        assert _pass(conn, now).granted == [newer]


def test_a_reservation_whose_image_is_still_building_holds_no_place_until_built(
    fresh_database: str,
):
    """`reserve --dockerfile` (image_builds/): while its image is built it is not in the
    queue, so the node goes to the later request; once built it queues as any other."""
    now = datetime.now(UTC)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
            (ALICE.principal_arn,),
        )
        building = _insert(
            conn,
            now - timedelta(minutes=2),
            task_token=None,
            image_build="a" * 64,
            current_detailed_status="building image: build, step 2/5",
        )
        newer = _insert(conn, now - timedelta(minutes=1))

        assert _pass(conn, now).granted == [newer]
        assert _row(conn, building) == (False, None, None, "building image: build, step 2/5")

        digest = "sha256:" + "b" * 64
        conn.execute(
            "UPDATE reservations SET image = 'r/gpu-dev-images:x', image_digest = %s,"
            " image_pull = %s WHERE reservation_id = %s",
            (digest, f"r/gpu-dev-images@{digest}", building),
        )
        _pass(conn, now + timedelta(seconds=5))
        assert _row(conn, building)[:2] == (False, 1)
