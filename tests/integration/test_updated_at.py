"""reservations.updated_at is the time of the transaction that last changed the row: set by
the trigger for every statement that leaves it alone, and by the allocator's rewrite of the
queue itself (migration 0025: the trigger then skips its call)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals
from tests.support.submitters import ALICE


def _queued(conn: psycopg.Connection[Any]) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
        " duration_hours, task_token) VALUES (%s, 'alice', 'queued', 'h100', 16, 1, 'token')",
        (reservation_id,),
    )
    return reservation_id


def _updated_at(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> datetime:
    row = conn.execute(
        "SELECT updated_at FROM reservations WHERE reservation_id = %s", (reservation_id,)
    ).fetchone()
    assert row is not None
    return row[0]


def test_a_statement_that_leaves_updated_at_alone_gets_its_transactions_time(
    autocommit_conn: psycopg.Connection[Any],
):
    conn = autocommit_conn
    conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)", (ALICE.principal_arn,)
    )
    reservation_id = _queued(conn)
    conn.execute(
        "UPDATE reservations SET updated_at = '2020-01-01Z' WHERE reservation_id = %s",
        (reservation_id,),
    )
    with conn.transaction():
        (now,) = conn.execute("SELECT now()").fetchone() or ()
        conn.execute(
            "UPDATE reservations SET warning_text = 'soon' WHERE reservation_id = %s",
            (reservation_id,),
        )
    assert _updated_at(conn, reservation_id) == now


def test_the_allocators_write_of_a_wait_sets_it(autocommit_conn: psycopg.Connection[Any]):
    conn = autocommit_conn
    conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)", (ALICE.principal_arn,)
    )
    reservation_id = _queued(conn)  # 16 GPUs on one 8-GPU node: it waits, never fits
    old = datetime(2020, 1, 1, tzinfo=UTC)
    conn.execute(
        "UPDATE reservations SET updated_at = %s WHERE reservation_id = %s", (old, reservation_id)
    )
    before = datetime.now(UTC)
    report = Allocator(conn, AcceptingSignals(), LifecycleSettings()).run(
        [Node("h100-0", "h100", True, False, 8)], [], set()
    )
    assert report.waits_written == 1
    assert before <= _updated_at(conn, reservation_id) <= datetime.now(UTC)
