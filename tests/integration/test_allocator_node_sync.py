"""The pass's node sync writes only what changed (`allocation/sync_nodes.sql`): an unchanged
node costs no row version, yet a node that shrinks loses its surplus slots (one still
allocated at the shrink goes in the later pass that finds it free), a node that grows or is
new gets its slots, a node no longer listed becomes unschedulable and one back schedulable."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg import sql

from gpudev.allocation.service import Allocator, release_allocation
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.databases import queued_h100
from tests.support.signals import AcceptingSignals


def _node(name: str, gpus: int = 8, *, ip: str = "10.0.0.1") -> Node:
    return Node(name, "h100", True, False, gpus, internal_ip=ip)


def _pass(conn: psycopg.Connection[Any], nodes: list[Node]) -> list[uuid.UUID]:
    report = Allocator(conn, AcceptingSignals(), LifecycleSettings()).run(nodes, [], set())  # type: ignore[arg-type]
    return report.granted


def _end(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> None:
    with conn.transaction():
        release_allocation(conn, reservation_id)
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by a test',"
            " status = 'cancelled', reservation_ended = now(),"
            " task_token = NULL WHERE reservation_id = %s",
            (reservation_id,),
        )


def _slots(conn: psycopg.Connection[Any], node: str) -> list[int]:
    rows = conn.execute(
        "SELECT slot FROM node_slots WHERE node_name = %s ORDER BY slot", (node,)
    ).fetchall()
    return [slot for (slot,) in rows]


def _held(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> list[tuple[str, int]]:
    rows = conn.execute(
        "SELECT node_name, slot FROM allocations WHERE reservation_id = %s ORDER BY 1, 2",
        (reservation_id,),
    ).fetchall()
    return [(node, slot) for node, slot in rows]


def _versions(conn: psycopg.Connection[Any], table: str) -> dict[str, list[str]]:
    """Each row's physical version (ctid, xmin, xmax), by node: a write changes it."""
    statement = sql.SQL(
        "SELECT node_name, ctid::text || '/' || xmin::text || '/' || xmax::text FROM {} ORDER BY 2"
    ).format(sql.Identifier(table))
    rows = conn.execute(statement).fetchall()
    versions: dict[str, list[str]] = {}
    for node, version in rows:
        versions.setdefault(node, []).append(version)
    return versions


def _alice(conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")


def test_an_unchanged_node_is_not_rewritten_and_a_changed_one_is(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        nodes = [_node("h100-0"), _node("h100-1", ip="10.0.0.2")]
        _pass(conn, nodes)
        before_nodes = _versions(conn, "cluster_nodes")
        before_slots = _versions(conn, "node_slots")
        (seen_at,) = conn.execute("SELECT max(seen_at) FROM cluster_nodes").fetchone()  # type: ignore[misc]

        _pass(conn, nodes)
        assert _versions(conn, "cluster_nodes") == before_nodes
        assert _versions(conn, "node_slots") == before_slots

        _pass(conn, [nodes[0], _node("h100-1", ip="10.0.0.9")])
        after = _versions(conn, "cluster_nodes")
        assert after["h100-0"] == before_nodes["h100-0"]
        assert after["h100-1"] != before_nodes["h100-1"]
        row = conn.execute(
            "SELECT node_ip, seen_at FROM cluster_nodes WHERE node_name = 'h100-1'"
        ).fetchone()
        assert row is not None and row[0] == "10.0.0.9" and row[1] > seen_at
        assert _versions(conn, "node_slots") == before_slots


def test_seen_at_is_refreshed_once_older_than_ten_minutes(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        nodes = [_node("h100-0"), _node("h100-1")]
        _pass(conn, nodes)
        conn.execute(
            "UPDATE cluster_nodes SET seen_at = now() - interval '11 minutes'"
            " WHERE node_name = 'h100-0'"
        )
        conn.execute(
            "UPDATE cluster_nodes SET seen_at = now() - interval '9 minutes'"
            " WHERE node_name = 'h100-1'"
        )
        _pass(conn, nodes)
        ages = dict(
            conn.execute(
                "SELECT node_name, now() - seen_at < interval '1 minute' FROM cluster_nodes"
            ).fetchall()
        )
        assert ages == {"h100-0": True, "h100-1": False}


def test_a_surplus_slot_held_at_a_shrink_goes_once_freed_and_is_never_granted(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _alice(conn)
        first = queued_h100(conn, 8)
        assert _pass(conn, [_node("h100-0")]) == [first]

        _pass(conn, [_node("h100-0", 4)])  # shrinks while every slot is held
        assert _slots(conn, "h100-0") == list(range(8))
        assert _held(conn, first) == [("h100-0", s) for s in range(8)]

        _end(conn, first)
        whole = queued_h100(conn, 8)  # needs the slots the node no longer has
        half = queued_h100(conn, 4)
        # Nothing about the node changed since the shrink: the freed surplus still goes.
        assert _pass(conn, [_node("h100-0", 4)]) == [half]
        assert _slots(conn, "h100-0") == [0, 1, 2, 3]
        assert _held(conn, half) == [("h100-0", s) for s in range(4)]
        assert _held(conn, whole) == []


def test_a_node_that_grows_or_is_new_gets_its_slots(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _pass(conn, [_node("h100-0", 4)])
        assert _slots(conn, "h100-0") == [0, 1, 2, 3]
        _pass(conn, [_node("h100-0", 8), _node("h100-1", 2)])
        assert _slots(conn, "h100-0") == list(range(8))
        assert _slots(conn, "h100-1") == [0, 1]


def test_a_node_gone_is_unschedulable_and_one_back_is_schedulable_again(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        _alice(conn)
        _pass(conn, [_node("h100-0", 4), _node("h100-1", 4)])
        _pass(conn, [_node("h100-0", 4)])
        schedulable = "SELECT node_name, schedulable FROM cluster_nodes ORDER BY 1"
        assert conn.execute(schedulable).fetchall() == [("h100-0", True), ("h100-1", False)]
        gone_version = _versions(conn, "cluster_nodes")["h100-1"]
        _pass(conn, [_node("h100-0", 4)])  # still gone: not written again
        assert _versions(conn, "cluster_nodes")["h100-1"] == gone_version

        first, second = queued_h100(conn, 4), queued_h100(conn, 4)
        assert _pass(conn, [_node("h100-0", 4)]) == [first]  # nothing granted on the gone node
        assert _pass(conn, [_node("h100-0", 4), _node("h100-1", 4)]) == [second]
        assert conn.execute(schedulable).fetchall() == [("h100-0", True), ("h100-1", True)]
        assert _held(conn, second) == [("h100-1", s) for s in range(4)]
