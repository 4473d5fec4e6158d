"""A released node is granted again only once the previous holder's pods are gone: a pod
pinned to a node whose GPUs a Terminating pod still holds is refused by the kubelet
(`OutOfnvidia.com/gpu`), so the allocator counts every live pod on a node that does not
belong to a reservation holding it."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.settings import LifecycleSettings
from tests.support.databases import queued_h100
from tests.support.signals import AcceptingSignals

NODE = Node("h100-0", "h100", True, False, 8)


def _pass(conn: psycopg.Connection[Any], pods: list[Pod]) -> list[uuid.UUID]:
    report = Allocator(conn, AcceptingSignals(), LifecycleSettings()).run([NODE], pods, set())  # type: ignore[arg-type]
    return report.granted


def _pod(reservation_id: uuid.UUID | None, gpus: int) -> Pod:
    return Pod(
        f"pod-{reservation_id}",
        NODE.name,
        "Running",
        gpus,
        None if reservation_id is None else str(reservation_id),
    )


def test_the_node_of_a_released_reservation_waits_for_its_terminating_pod(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        first = queued_h100(conn, 8)
        assert _pass(conn, []) == [first]
        conn.execute("DELETE FROM allocations WHERE reservation_id = %s", (first,))
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by a test',"
            " status = 'cancelled', reservation_ended = now(),"
            " task_token = NULL WHERE reservation_id = %s",
            (first,),
        )
        second = queued_h100(conn, 8)
        terminating = _pod(first, 8)  # still Running, deletionTimestamp set
        assert _pass(conn, [terminating]) == []
        assert _pass(conn, []) == [second]


def test_a_holders_own_pod_does_not_count_against_the_node(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        first = queued_h100(conn, 4)
        assert _pass(conn, []) == [first]
        second = queued_h100(conn, 4)
        assert _pass(conn, [_pod(first, 4)]) == [second]
        third = queued_h100(conn, 1)
        assert _pass(conn, [_pod(first, 4), _pod(second, 4)]) == []
        conn.execute("DELETE FROM allocations WHERE reservation_id = %s", (second,))
        assert _pass(conn, [_pod(first, 4), _pod(None, 3)]) == [third]


def test_a_terminating_pods_gpus_count_as_coming_back_so_backfill_never_delays_the_head(
    fresh_database,
):
    # an hour lasts 36 s; a pod must be ready within 2 s (a grant's expected end: that
    # allowance, then its duration)
    settings = LifecycleSettings(seconds_per_hour=36, ready_timeout_seconds=2)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        released = uuid.uuid4()
        terminating = Pod("pod-released", NODE.name, "Running", 4, str(released), time.time() + 10)
        head = queued_h100(conn, 8)
        # 2 + 36 s: would still hold a GPU when the head can start
        long = queued_h100(conn, 1, hours=1)
        # 2 + 3.6 s: done before the terminating pod is gone
        short = queued_h100(conn, 1, hours=0.1)
        report = Allocator(conn, AcceptingSignals(), settings).run([NODE], [terminating], set())  # type: ignore[arg-type]
        assert report.granted == [short]
        waits = dict(
            conn.execute(
                "SELECT reservation_id, queue_position FROM reservations"
                " WHERE reservation_id = ANY(%s)",
                ([head, long],),
            ).fetchall()
        )
        assert waits == {head: 1, long: 2}
