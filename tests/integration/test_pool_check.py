"""The pool hands out a connection returned moments ago without a round trip, but never one
the server closed while it sat in the pool, and checks with a round trip any connection that
sat there `CHECK_IDLE_SECONDS` or more by the wall clock (docs/decisions.md, 2026-11-24,
"The API under load: keep-alive, fewer round trips, an honest bound")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from gpudev.db.pool import CHECK_IDLE_SECONDS, RecentUseCheck, open_pool
from gpudev.settings import DatabaseSettings


class Clock:
    """A wall clock the test moves (the pool reads `time.time` in production)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The backend pid of each connection psycopg_pool's round-trip check ran on."""
    checked: list[int] = []
    original = ConnectionPool.check_connection

    def counted(conn: psycopg.Connection[Any]) -> None:
        checked.append(conn.info.backend_pid)
        original(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return checked


@pytest.fixture
def pool(database_url: str, clock: Clock) -> Iterator[ConnectionPool]:
    settings = DatabaseSettings(database_url=database_url, db_pool_max_size=1)
    pool = open_pool(settings, check=RecentUseCheck(clock=clock))
    try:
        yield pool
    finally:
        pool.close()


def _pid(pool: ConnectionPool) -> int:
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


def test_a_connection_returned_moments_ago_is_reused_without_a_round_trip(pool, round_trips):
    first = _pid(pool)
    assert _pid(pool) == first
    assert round_trips == []


def test_a_connection_idle_past_the_window_is_checked_first(pool, clock, round_trips):
    first = _pid(pool)
    clock.now += CHECK_IDLE_SECONDS  # a frozen Lambda thawed: the wall clock moved on
    assert _pid(pool) == first
    assert round_trips == [first]


def test_a_wall_clock_stepped_back_checks_the_connection(pool, clock, round_trips):
    first = _pid(pool)
    clock.now -= 60
    assert _pid(pool) == first
    assert round_trips == [first]


def test_a_connection_the_server_closed_while_idle_is_replaced_not_handed_out(
    pool, database_url, round_trips
):
    """Within the window, with no time passed on the pool's clock: the backend is terminated
    (as a failover or an operator does), and the next request gets a working connection."""
    first = _pid(pool)
    with psycopg.connect(database_url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (first,)).fetchone() == (True,)
        for _ in range(200):  # the backend's goodbye reaches the pooled socket within ms
            gone = admin.execute(
                "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s", (first,)
            ).fetchone()
            if gone == (True,):
                break
            time.sleep(0.01)
    replacement = _pid(pool)
    assert replacement != first
    assert round_trips == [first]  # the closed one was checked, failed and was discarded
