"""A grant whose signal fails (SendTaskSuccess throttled) never stops the others, never fails
the pass, and is sent again by the next pass."""

from __future__ import annotations

import psycopg
from botocore.exceptions import ClientError

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.db.queries import query
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake
from tests.support.databases import queued_h100

NODES = [Node("h100-0", "h100", True, False, 8), Node("h100-1", "h100", True, False, 8)]


class ThrottledFor:
    def __init__(self, token: str):
        self.throttled = token
        self.woken: list[str] = []

    def wake(self, task_token: str, wake: Wake) -> bool:
        if task_token == self.throttled:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
                "SendTaskSuccess",
            )
        self.woken.append(task_token)
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        return True


def test_a_throttled_signal_is_logged_and_retried_by_the_next_pass(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        first, second = queued_h100(conn, token="first"), queued_h100(conn, token="second")
        signals = ThrottledFor("first")
        report = Allocator(conn, signals, LifecycleSettings()).run(NODES, [], set())  # type: ignore[arg-type]
        assert sorted(report.granted) == sorted([first, second])
        assert signals.woken == ["second"]
        assert (report.signalled, report.signal_failures) == (1, 1)

        signals.throttled = ""
        report = Allocator(conn, signals, LifecycleSettings()).run(NODES, [], set())  # type: ignore[arg-type]
        assert signals.woken == ["second", "first"] and report.signalled == 1


def test_the_pass_reports_how_long_each_granted_reservation_waited(fresh_database):
    """The dashboard's queue wait (QueueWaitSeconds, one value per grant) by the database's
    clock: a reservation submitted 90 s ago waited about 90 s; one still queued is not one."""
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        waited, fresh, left = (
            queued_h100(conn, token="waited"),
            queued_h100(conn, token="fresh"),
            queued_h100(conn, token="left"),
        )
        conn.execute(
            "UPDATE reservations SET created_at = now() - interval '90 seconds'"
            " WHERE reservation_id = %s",
            (waited,),
        )
        conn.execute(
            "UPDATE reservations SET created_at = now() + interval '1 second'"
            " WHERE reservation_id = %s",
            (left,),
        )
        report = Allocator(conn, ThrottledFor(""), LifecycleSettings()).run(NODES, [], set())  # type: ignore[arg-type]
        assert report.granted == [waited, fresh]  # FIFO: two nodes, the newest stays queued
        assert 90 <= report.granted_waits[0] < 120 and 0 <= report.granted_waits[1] < 30


def test_the_pass_finds_unsignalled_grants_through_their_index_not_a_table_scan(fresh_database):
    """Every pass reads the grants not signalled yet: a few rows, whatever the number of
    reservations (migration 0023's partial index; the query's conditions must imply it)."""
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # an empty table: show what it could use
        plan = conn.execute("EXPLAIN " + query("allocation/unsignalled")).fetchall()
    assert "reservations_unsignalled_idx" in "\n".join(line for (line,) in plan)


def test_the_queue_is_read_in_order_from_its_index_without_a_sort(fresh_database: str):
    """The queue read's order is the waiting index's (migration 0026): at 100,000 queued a
    sort spilled to disk."""
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # an empty table: show what it could use
        plan = "\n".join(line for (line,) in conn.execute("EXPLAIN " + query("allocation/queue")))
    assert "reservations_waiting_idx" in plan and "Sort" not in plan
