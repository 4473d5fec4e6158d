"""Waiting reservations carry an estimated start (a moment), not minutes from now: a later
pass with nothing changed writes no row even though time moved, a pass whose plan moved
writes only the rows that moved, and the API's view turns the moment into clock minutes
under a compressed clock."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gpudev.allocation.service import Allocator, AllocatorReport
from gpudev.cluster.vocabulary import Node
from gpudev.reservations.schemas import ReservationView
from gpudev.reservations.service import find_reservation
from gpudev.settings import LifecycleSettings, lifecycle_settings
from tests.support.signals import AcceptingSignals
from tests.support.submitters import ALICE

NODE = Node("h100-0", "h100", True, False, 8)


@pytest.fixture
def compressed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[LifecycleSettings]:
    """An hour lasts 36 s for the allocator and for the API's view alike."""
    monkeypatch.setenv("LIFECYCLE_SECONDS_PER_HOUR", "36")
    lifecycle_settings.cache_clear()
    yield LifecycleSettings(seconds_per_hour=36)
    lifecycle_settings.cache_clear()


def _insert(
    conn: psycopg.Connection[Any], gpus: int, nodes: int, hours: float, **more: Any
) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    columns = {
        "reservation_id": reservation_id,
        "user_id": "alice",
        "status": "queued",
        "gpu_type": "h100",
        "gpu_count": gpus,
        "total_nodes": nodes,
        "duration_hours": hours,
        "task_token": f"token-{reservation_id}",
        **more,
    }
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    conn.execute(f"INSERT INTO reservations ({names}) VALUES ({marks})", list(columns.values()))  # noqa: S608
    return reservation_id


def _busy_node(conn: psycopg.Connection[Any], now: datetime, expires_at: datetime) -> None:
    """The node's 8 GPUs held by an active reservation until `expires_at`."""
    conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
        (ALICE.principal_arn,),
    )
    active = _insert(
        conn,
        8,
        1,
        9,
        status="active",
        granted_at=now,
        launched_at=now,
        expires_at=expires_at,
        task_token=None,
    )
    Allocator(conn, AcceptingSignals(), LifecycleSettings()).run([NODE], [], set())  # type: ignore[arg-type]
    conn.execute(
        "INSERT INTO allocations (node_name, slot, reservation_id)"
        " SELECT 'h100-0', s, %s FROM generate_series(0, 7) s",
        (active,),
    )


def _waits(conn: psycopg.Connection[Any], ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    """Position, estimated start and the row version (xmin: it changes on every write)."""
    return [
        conn.execute(
            "SELECT queue_position, estimated_start_at, xmin::text FROM reservations"
            " WHERE reservation_id = %s",
            (rid,),
        ).fetchone()
        or ()
        for rid in ids
    ]


def _pass(
    conn: psycopg.Connection[Any], settings: LifecycleSettings, now: float
) -> AllocatorReport:
    allocator = Allocator(conn, AcceptingSignals(), settings, clock=lambda: now)
    return allocator.run([NODE], [], set())  # type: ignore[arg-type]


def test_a_later_pass_with_nothing_changed_writes_no_row(fresh_database: str):
    settings = LifecycleSettings()  # real hours: a minute later, every ETA in minutes moved
    now = datetime.now(UTC)
    ends = now + timedelta(hours=1)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _busy_node(conn, now, ends)
        head = _insert(conn, 8, 1, 2)
        second = _insert(conn, 8, 1, 1)
        never = _insert(conn, 16, 2, 1)  # two whole nodes; the cluster has one

        first = _pass(conn, settings, now.timestamp())
        assert first.granted == [] and first.waits_written == 3
        recorded = _waits(conn, [head, second, never])
        assert [(position, start) for position, start, _ in recorded] == [
            (1, ends),
            (2, ends + timedelta(hours=2)),
            (3, None),
        ]

        later = _pass(conn, settings, now.timestamp() + 60)
        assert later.waits_written == 0
        assert _waits(conn, [head, second, never]) == recorded  # same row versions

        conn.execute(
            "UPDATE reservations SET cancel_requested_at = now() WHERE reservation_id = %s",
            (head,),
        )
        moved = _pass(conn, settings, now.timestamp() + 120)
        assert moved.waits_written == 2  # both moved up; the head is no longer queued
        assert [(p, s) for p, s, _ in _waits(conn, [second, never])] == [(1, ends), (2, None)]


def test_a_start_is_now_plus_the_eta_in_real_seconds_and_shown_in_clock_minutes(
    fresh_database: str, compressed_clock: LifecycleSettings
):
    now = datetime.now(UTC)
    ends = now + timedelta(seconds=18)  # half a clock hour
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _busy_node(conn, now, ends)
        head = _insert(conn, 8, 1, 2)  # 72 s
        second = _insert(conn, 4, 1, 1)
        _pass(conn, compressed_clock, now.timestamp())
        starts = [start for _, start, _ in _waits(conn, [head, second])]
        assert starts == [ends, ends + timedelta(seconds=72)]

        shown = [ReservationView.of(find_reservation(conn, ALICE, str(r))) for r in (head, second)]
        read_at = datetime.now(UTC)
        # 30 and 150 clock minutes from the pass, rounded up, less what passed since
        elapsed = (read_at - now).total_seconds() * 60 / 36
        assert [v.queue_position for v in shown] == [1, 2]
        for view, minutes in zip(shown, (30, 150), strict=True):
            assert view.estimated_wait_minutes is not None
            assert minutes - elapsed - 1 <= view.estimated_wait_minutes <= minutes
