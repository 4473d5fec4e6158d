"""A pass grants a multinode reservation nodes of one fabric (zone and placement group) only:
the nodes' fabrics go through the node sync (`allocation/sync_nodes.sql`, migration 0041)
into the planner (docs/multinode.md)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals


def _node(name: str, fabric: str) -> Node:
    return Node(name, "h100", True, False, 8, internal_ip="10.0.0.1", fabric=fabric)


def _sixteen_gpus(conn: psycopg.Connection[Any]) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
        " total_nodes, duration_hours, task_token)"
        " VALUES (%s, 'alice', 'queued', 'h100', 16, 2, 1, 'token')",
        (reservation_id,),
    )
    return reservation_id


def _pass(conn: psycopg.Connection[Any], nodes: list[Node]) -> list[uuid.UUID]:
    report = Allocator(conn, AcceptingSignals(), LifecycleSettings()).run(nodes, [], set())  # type: ignore[arg-type]
    return report.granted


def test_a_sixteen_gpu_reservation_waits_rather_than_span_two_zones(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        reservation_id = _sixteen_gpus(conn)
        split = [_node("h100-0", "us-east-2a/pg-h100"), _node("h100-1", "us-east-2b/pg-h100")]

        assert _pass(conn, split) == []
        stored = conn.execute("SELECT node_name, fabric FROM cluster_nodes ORDER BY 1").fetchall()
        assert stored == [("h100-0", "us-east-2a/pg-h100"), ("h100-1", "us-east-2b/pg-h100")]

        # a second node joins zone b's placement group: the pair there is granted
        assert _pass(conn, [*split, _node("h100-2", "us-east-2b/pg-h100")]) == [reservation_id]
        held = conn.execute(
            "SELECT DISTINCT node_name FROM allocations WHERE reservation_id = %s ORDER BY 1",
            (reservation_id,),
        ).fetchall()
        assert held == [("h100-1",), ("h100-2",)]
