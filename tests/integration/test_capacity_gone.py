"""A waiting reservation whose type's node groups were scaled down (MaxSize 0, or below the
nodes it needs) is ended by the allocator's pass once they have stayed so for the patience,
cancelled with a reason naming the types that have nodes, and its execution is woken; before
the patience, or for a type not measured yet, it keeps waiting (issue #28 item 3)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from gpudev.allocation.capacity_gone import CAPACITY_GONE_PATIENCE_HOURS
from gpudev.allocation.service import Allocator
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake
from tests.support.databases import queued_h100

SETTINGS = LifecycleSettings()
PATIENCE_SECONDS = CAPACITY_GONE_PATIENCE_HOURS * SETTINGS.seconds_per_hour


class Recorded:
    def __init__(self) -> None:
        self.woken: list[tuple[str, str]] = []

    def wake(self, task_token: str, wake: Wake) -> bool:
        self.woken.append((task_token, wake.outcome))
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        return True


def _measure(conn: psycopg.Connection[Any], gpu_type: str, max_nodes: int, ago: float) -> None:
    """As the availability updater would: the type's groups hold `max_nodes`, since `ago` s."""
    conn.execute(
        "UPDATE gpu_types SET max_nodes = %s, last_availability_update = now(),"
        " max_nodes_since = now() - make_interval(secs => %s) WHERE gpu_type = %s",
        (max_nodes, ago, gpu_type),
    )


def _row(conn: psycopg.Connection[Any], rid: object) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, failure_reason, current_detailed_status, task_token"
        " FROM reservations WHERE reservation_id = %s",
        (rid,),
    ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.fixture
def conn(fresh_database: str) -> Any:
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        conn.execute(
            "UPDATE gpu_types SET max_nodes = 0, last_availability_update = now(),"
            " max_nodes_since = now()"
        )
        for gpu_type in ("t4", "cpu-x86"):
            _measure(conn, gpu_type, 8, 0)
        yield conn


def _pass(conn: psycopg.Connection[Any], signals: Recorded) -> Any:
    return Allocator(conn, signals, SETTINGS).run([], [], set())  # type: ignore[arg-type]


def test_a_type_scaled_to_zero_ends_its_queue_after_the_patience_with_the_reason(conn):
    rid = queued_h100(conn, token="parked")
    _measure(conn, "h100", 0, PATIENCE_SECONDS + 5)
    signals = Recorded()

    report = _pass(conn, signals)

    status, reason, line, token = _row(conn, rid)
    assert report.capacity_gone == [rid]
    assert (status, token) == ("cancelled", None)
    assert (
        reason
        == line
        == (
            "cancelled while queued: no h100 nodes in this cluster; types with nodes: t4, "
            "cpu-x86 (the type's node groups could not hold it for 30 min)"
        )
    )
    assert signals.woken == [("parked", "cancel")]
    assert report.queued == 0  # the pass's plan no longer sees it


def test_within_the_patience_or_before_any_measure_the_reservation_keeps_waiting(conn):
    rid = queued_h100(conn)
    _measure(conn, "h100", 0, PATIENCE_SECONDS - 60)
    assert _pass(conn, Recorded()).capacity_gone == []
    conn.execute("UPDATE gpu_types SET last_availability_update = NULL, max_nodes_since = NULL"
                 " WHERE gpu_type = 'h100'")  # fmt: skip
    assert _pass(conn, Recorded()).capacity_gone == []
    assert _row(conn, rid)[0] == "queued"


def test_a_group_shrunk_below_a_multinode_request_ends_only_that_request(conn):
    small = queued_h100(conn, token="small")
    big = queued_h100(conn, gpus=32, token="big")
    conn.execute("UPDATE reservations SET total_nodes = 4 WHERE reservation_id = %s", (big,))
    _measure(conn, "h100", 2, PATIENCE_SECONDS + 5)

    report = _pass(conn, Recorded())

    assert report.capacity_gone == [big]
    assert _row(conn, big)[1].startswith(
        "cancelled while queued: h100 has at most 2 nodes in this cluster and this request "
        "needs 4; types with nodes: h100, t4, cpu-x86"
    )
    assert _row(conn, small)[0] == "queued"


def test_a_single_node_type_is_looked_at_only_once_it_has_no_node_at_all(conn):
    rid = queued_h100(conn, token="t4")
    conn.execute("UPDATE reservations SET gpu_type = 't4', gpu_count = 1 WHERE reservation_id = %s",
                 (rid,))  # fmt: skip
    _measure(conn, "t4", 1, PATIENCE_SECONDS + 5)
    assert _pass(conn, Recorded()).capacity_gone == []
    _measure(conn, "t4", 0, PATIENCE_SECONDS + 5)
    assert _pass(conn, Recorded()).capacity_gone == [rid]
    assert _row(conn, rid)[1].startswith("cancelled while queued: no t4 nodes in this cluster")
