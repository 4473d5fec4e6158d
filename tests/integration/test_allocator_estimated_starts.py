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

from gpudev.allocation.service import Allocator, AllocatorReport, release_allocation
from gpudev.cluster.vocabulary import Node
from gpudev.reservations.schemas import ReservationView
from gpudev.reservations.service import find_reservation
from gpudev.settings import LifecycleSettings, lifecycle_settings
from tests.support.signals import AcceptingSignals
from tests.support.submitters import ALICE

NODE = Node("h100-0", "h100", True, False, 8)


@pytest.fixture
def compressed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[LifecycleSettings]:
    """An hour lasts 36 s for the allocator and for the API's view alike; a pod must be ready
    within 6 s (as in the lifecycle tier)."""
    monkeypatch.setenv("LIFECYCLE_SECONDS_PER_HOUR", "36")
    lifecycle_settings.cache_clear()
    yield LifecycleSettings(seconds_per_hour=36, ready_timeout_seconds=6)
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
        # the head holds the node from its start until its expected end: the provisioning
        # allowance, then its 2 hours
        allowance = timedelta(seconds=settings.ready_timeout_seconds)
        assert [(position, start) for position, start, _ in recorded] == [
            (1, ends),
            (2, ends + allowance + timedelta(hours=2)),
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
        assert starts == [ends, ends + timedelta(seconds=6 + 72)]  # allowance, 2 clock hours

        shown = [ReservationView.of(find_reservation(conn, ALICE, str(r))) for r in (head, second)]
        read_at = datetime.now(UTC)
        # 30 and 160 clock minutes from the pass (18 s, 18 + 78 s), rounded up, less what
        # passed since
        elapsed = (read_at - now).total_seconds() * 60 / 36
        assert [v.queue_position for v in shown] == [1, 2]
        for view, minutes in zip(shown, (30, 160), strict=True):
            assert view.estimated_wait_minutes is not None
            assert minutes - elapsed - 1 <= view.estimated_wait_minutes <= minutes


def test_the_pass_after_a_grant_reads_back_the_end_the_granting_pass_planned(
    fresh_database: str,
):
    settings = LifecycleSettings()
    allowance = timedelta(seconds=settings.ready_timeout_seconds)
    now = datetime.now(UTC)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
            (ALICE.principal_arn,),
        )
        first = _insert(conn, 8, 1, 1)
        second = _insert(conn, 8, 1, 2)
        third = _insert(conn, 4, 1, 1)
        never = _insert(conn, 16, 2, 1)

        granting = _pass(conn, settings, now.timestamp())
        assert granting.granted == [first] and granting.waits_written == 3
        granted_at = conn.execute(
            "SELECT granted_at FROM reservations WHERE reservation_id = %s", (first,)
        ).fetchone()
        assert granted_at == (now,)  # the pass's time, from which it planned the grant's end
        first_ends = now + allowance + timedelta(hours=1)
        second_ends = first_ends + allowance + timedelta(hours=2)
        recorded = _waits(conn, [second, third, never])
        assert [(p, s) for p, s, _ in recorded] == [(1, first_ends), (2, second_ends), (3, None)]

        # the next pass reads the grant's end back from its row: the same moment, no write
        after = _pass(conn, settings, now.timestamp() + 5)
        assert (after.granted, after.waits_written) == ([], 0)
        assert _waits(conn, [second, third, never]) == recorded  # same row versions

        # active sooner than the allowance: its expiry is its end, and exactly the two
        # starts behind it move
        launched = now + timedelta(seconds=30)
        conn.execute(
            "UPDATE reservations SET status = 'active', launched_at = %s, expires_at = %s"
            " WHERE reservation_id = %s",
            (launched, launched + timedelta(hours=1), first),
        )
        active = _pass(conn, settings, now.timestamp() + 40)
        assert active.waits_written == 2
        moved = _waits(conn, [second, third, never])
        assert [(p, s) for p, s, _ in moved] == [
            (1, launched + timedelta(hours=1)),
            (2, launched + timedelta(hours=1) + allowance + timedelta(hours=2)),
            (3, None),
        ]
        assert moved[2] == recorded[2]  # the one that never fits was not rewritten


def _pages(conn: psycopg.Connection[Any], ids: list[uuid.UUID]) -> list[int]:
    """The heap page each row's live version is on."""
    return [
        row[0]
        for rid in ids
        if (
            row := conn.execute(
                "SELECT (ctid::text::point)[0]::int FROM reservations WHERE reservation_id = %s",
                (rid,),
            ).fetchone()
        )
    ]


def test_rewriting_every_start_keeps_each_row_on_its_page(fresh_database: str):
    """A pass that moves every start (the first one, and one after the reservation at the
    front ended early) rewrites each waiting row on its own page, a heap-only update that
    touches no index: migration 0024 leaves room on a page for a new version of every row
    on it (at 0019's fillfactor 70 most rows moved to other pages)."""
    settings = LifecycleSettings()
    now = datetime.now(UTC)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _busy_node(conn, now, now + timedelta(hours=1))
        queued = [_insert(conn, 8, 1, 1) for _ in range(300)]  # one behind the other
        pages = _pages(conn, queued)
        assert len(set(pages)) >= 10  # the queue spans pages

        first = _pass(conn, settings, now.timestamp())
        assert first.waits_written == 300
        assert _pages(conn, queued) == pages

        active = conn.execute("SELECT reservation_id FROM reservations WHERE status = 'active'")
        release_allocation(conn, (active.fetchone() or ())[0])
        after_early_end = _pass(conn, settings, now.timestamp() + 60)
        assert after_early_end.granted == [queued[0]]
        assert after_early_end.waits_written == 299  # every start moved, and every position
        assert _pages(conn, queued[1:]) == pages[1:]


def test_a_start_a_microsecond_off_is_rewritten_and_only_it(fresh_database: str):
    """The pass compares recorded starts (read as epoch seconds) with its own to the
    microsecond: a row whose start differs by one is sent and written, the rest are not."""
    settings = LifecycleSettings()
    now = datetime.now(UTC)
    ends = now + timedelta(hours=1)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _busy_node(conn, now, ends)
        ids = [_insert(conn, 8, 1, 1) for _ in range(3)]
        assert _pass(conn, settings, now.timestamp()).waits_written == 3
        recorded = _waits(conn, ids)
        for moved, shift in ((ids[0], 1), (ids[2], -1)):
            conn.execute(
                "UPDATE reservations SET estimated_start_at = estimated_start_at + %s"
                " WHERE reservation_id = %s",
                (timedelta(microseconds=shift), moved),
            )
        shifted = _waits(conn, ids)

        again = _pass(conn, settings, now.timestamp() + 60)
        assert again.waits_written == 2
        after = _waits(conn, ids)
        assert [(p, s) for p, s, _ in after] == [(p, s) for p, s, _ in recorded]
        assert after[1] == shifted[1]  # the untouched row kept its version
        assert after[0][2] != shifted[0][2] and after[2][2] != shifted[2][2]
