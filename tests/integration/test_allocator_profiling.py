"""A profiling reservation against real PostgreSQL: the pass syncs which nodes are dedicated
to profiling (`cluster_nodes.profiling`, migration 0027), grants a profiling reservation
every slot of a node, on the type's profiling nodes when it has some, keeps everyone else
off those, and the reservation's placements tell its pod it is on one."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.repositories.lifecycle import LifecycleRepository
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals


def _node(name: str, profiling: bool = False) -> Node:
    return Node(name, "h100", True, False, 8, internal_ip="10.0.0.1", profiling=profiling)


def _pass(conn: psycopg.Connection[Any], nodes: list[Node]) -> list[uuid.UUID]:
    report = Allocator(conn, AcceptingSignals(), LifecycleSettings()).run(nodes, [], set())  # type: ignore[arg-type]
    return report.granted


def _queued(conn: psycopg.Connection[Any], gpus: int, profiling: bool) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
        " total_nodes, duration_hours, task_token, profiling)"
        " VALUES (%s, 'alice', 'queued', 'h100', %s, 1, 1, 'token', %s)",
        (reservation_id, gpus, profiling),
    )
    return reservation_id


def _held(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> dict[str, int]:
    rows = conn.execute(
        "SELECT node_name, count(*) FROM allocations WHERE reservation_id = %s GROUP BY 1",
        (reservation_id,),
    ).fetchall()
    return dict(rows)


def test_without_profiling_nodes_a_profiling_reservation_holds_a_whole_node_alone(
    fresh_database,
):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        nodes = [_node("h100-a"), _node("h100-b")]
        plain = _queued(conn, 1, profiling=False)
        _pass(conn, nodes)
        profiling = _queued(conn, 1, profiling=True)
        later = _queued(conn, 7, profiling=False)
        granted = _pass(conn, nodes)
        assert _held(conn, plain) == {"h100-a": 1}
        # not best fit on a (7 free): the whole of b, and the 7-GPU one takes what a has left
        assert _held(conn, profiling) == {"h100-b": 8}
        assert _held(conn, later) == {"h100-a": 7} and set(granted) == {profiling, later}
        (placement,) = LifecycleRepository(conn).placements(profiling)
        assert (placement.slots, placement.profiling_node) == (8, False)
        one_more = _queued(conn, 1, profiling=False)
        assert _pass(conn, nodes) == [] and _held(conn, one_more) == {}


def test_profiling_nodes_take_the_types_profiling_and_nothing_else(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        nodes = [_node("h100-a"), _node("h100-p", profiling=True)]
        plain = [_queued(conn, 8, profiling=False), _queued(conn, 1, profiling=False)]
        profiling = _queued(conn, 1, profiling=True)
        _pass(conn, nodes)
        flags = dict(conn.execute("SELECT node_name, profiling FROM cluster_nodes").fetchall())
        assert flags == {"h100-a": False, "h100-p": True}
        assert _held(conn, plain[0]) == {"h100-a": 8}
        assert _held(conn, plain[1]) == {}  # waits for h100-a, never on the profiling node
        (position,) = conn.execute(
            "SELECT queue_position FROM reservations WHERE reservation_id = %s", (plain[1],)
        ).fetchone()  # type: ignore[misc]
        assert position == 1
        assert _held(conn, profiling) == {"h100-p": 8}
        (placement,) = LifecycleRepository(conn).placements(profiling)
        assert placement.profiling_node is True

        # the label taken off: an ordinary node again, synced by the next pass
        nodes[1] = _node("h100-p")
        _pass(conn, nodes)
        assert conn.execute(
            "SELECT profiling FROM cluster_nodes WHERE node_name = 'h100-p'"
        ).fetchone() == (False,)


def test_the_database_refuses_a_grant_that_would_share_a_profiling_node(fresh_database):
    """Whatever the planner decides, a profiling reservation's node holds nobody else's slot
    (migration 0027's statement trigger), in either order; nothing of the grant is kept."""
    from datetime import UTC, datetime

    from gpudev.repositories.allocations import AllocationsRepository, SlotGrant

    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        _pass(conn, [_node("h100-a")])
        for first_profiling in (True, False):
            first = _queued(conn, 1, profiling=first_profiling)
            second = _queued(conn, 1, profiling=not first_profiling)
            repository = AllocationsRepository(conn)
            now = datetime.now(UTC)
            repository.grant([SlotGrant("h100-a", 0, str(first), 0)], now)
            try:
                with conn.transaction():
                    repository.grant([SlotGrant("h100-a", 1, str(second), 0)], now)
            except psycopg.errors.CheckViolation as refused:
                assert refused.diag.constraint_name == "allocations_profiling_alone"
            else:
                raise AssertionError("a profiling node was shared")
            assert _held(conn, second) == {}
            conn.execute("DELETE FROM allocations")
        # ordinary reservations still share a node, in one statement or two
        one, two = _queued(conn, 1, profiling=False), _queued(conn, 1, profiling=False)
        AllocationsRepository(conn).grant(
            [SlotGrant("h100-a", 0, str(one), 0), SlotGrant("h100-a", 1, str(two), 0)],
            datetime.now(UTC),
        )
        assert _held(conn, one) == _held(conn, two) == {"h100-a": 1}


def test_a_node_a_profiling_reservation_holds_in_part_offers_nothing_to_others(fresh_database):
    """A profiling reservation granted before whole nodes (one slot), or whose node grew
    since: the rest of its node is not free, so the pass places nobody there (the trigger
    would refuse it and fail the pass) and goes on with the other nodes."""
    from datetime import UTC, datetime

    from gpudev.repositories.allocations import AllocationsRepository, SlotGrant

    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        nodes = [_node("h100-a"), _node("h100-b")]
        _pass(conn, nodes)
        legacy = _queued(conn, 1, profiling=True)
        one_slot = [SlotGrant("h100-a", 0, str(legacy), 0)]
        AllocationsRepository(conn).grant(one_slot, datetime.now(UTC))
        small, whole = _queued(conn, 1, profiling=False), _queued(conn, 8, profiling=False)
        granted = _pass(conn, nodes)
        assert _held(conn, small) == {"h100-b": 1}  # not best fit on a's 7 "free" slots
        assert granted == [small] and _held(conn, whole) == {}
        assert _held(conn, legacy) == {"h100-a": 1}
