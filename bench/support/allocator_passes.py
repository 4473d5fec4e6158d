"""bench/allocator.py's passes of our allocator, timed and counted on one connection: the
first pass, the next ones, the same with an empty plan memo, and one after an early end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import psycopg

from bench.support.allocator_seed import CountingSignals, create_database, h100_nodes
from gpudev.allocation.memo import PlanMemo
from gpudev.allocation.service import Allocator, release_allocation
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.counting import CountingConnection


def our_pass(
    conn: Any, settings: LifecycleSettings, nodes: list[Node], memo: PlanMemo, later: float = 0.0
) -> tuple[int, int]:
    """One pass, `later` seconds from now by the allocator's clock; (granted, rows written)."""
    allocator = Allocator(
        conn, CountingSignals(), settings, clock=lambda: time.time() + later, memo=memo
    )
    report = allocator.run(nodes, [], set())  # type: ignore[arg-type]
    return len(report.granted), report.waits_written


def end_early(conn: Any) -> None:
    """Tear down of the active reservation that was to end first (its user cancelled it):
    the node it held is free now, half an hour before the planner expected it (not timed)."""
    with conn.transaction():
        (reservation_id,) = conn.execute(
            "SELECT reservation_id FROM reservations WHERE status = 'active'"
            " ORDER BY expires_at, reservation_id LIMIT 1"
        ).fetchone()
        release_allocation(conn, reservation_id)
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by the bench',"
            " status = 'cancelled', cancelled_at = now(),"
            " reservation_ended = now()"
            " WHERE reservation_id = %s",
            (reservation_id,),
        )


class TimedConnection(CountingConnection):
    """Also adds up the time spent in statements (sending, the server's work, receiving):
    the rest of a pass is Python (reading rows into objects, planning) and the commit."""

    def __init__(self, conn: psycopg.Connection[Any]):
        super().__init__(conn)
        self.sql_seconds = 0.0

    def _timed(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self.sql_seconds += time.perf_counter() - start

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed(super().execute, *args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cursor = super().cursor(*args, **kwargs)
        execute = cursor.execute
        cursor.execute = lambda *a, **k: self._timed(execute, *a, **k)
        return cursor


class Measured(NamedTuple):
    wall: float
    cpu: float
    sql: float
    statements: int
    granted: int
    written: int  # waiting rows written


Run = Callable[[Any], tuple[int, int]]


def measure(url: str, runs: list[Run | tuple[Callable[[Any], None], Run]]) -> list[Measured]:
    """Each run timed on the same connection; a (prepare, run) pair prepares untimed. The
    connection is in autocommit, like the allocator function's (`autocommit_connection`):
    a pass commits its own transaction, so the next pass (and page pruning) sees it done."""
    results = []
    with psycopg.connect(url, autocommit=True) as raw:
        for entry in runs:
            if isinstance(entry, tuple):
                prepare, run = entry
                prepare(raw)
            else:
                run = entry
            conn = TimedConnection(raw)
            wall, cpu = time.perf_counter(), time.process_time()
            granted, written = run(conn)
            results.append(
                Measured(
                    time.perf_counter() - wall,
                    time.process_time() - cpu,
                    conn.sql_seconds,
                    conn.statements,
                    granted,
                    written,
                )
            )
    return results


PASSES = (
    "first pass",
    "  next pass, 5 s later",
    "  a minute later, unchanged",
    "  the same, empty plan memo",
    "  after an early end",
)


def runs_of_ours(
    admin_url: str, settings: LifecycleSettings, count: int, runs: int
) -> list[list[Measured]]:
    """Per run, the four passes (PASSES) on a fresh copy of the seed."""
    nodes = h100_nodes(count)
    results = []
    for _ in range(runs):
        url = create_database(admin_url, "bench_allocator_ours", "bench_allocator_seed")
        memo = PlanMemo()
        results.append(
            measure(
                url,
                [
                    lambda conn, memo=memo: our_pass(conn, settings, nodes, memo),
                    lambda conn, memo=memo: our_pass(conn, settings, nodes, memo, later=5.0),
                    lambda conn, memo=memo: our_pass(conn, settings, nodes, memo, later=65.0),
                    lambda conn: our_pass(conn, settings, nodes, PlanMemo(), later=66.0),
                    (
                        end_early,
                        lambda conn, memo=memo: our_pass(conn, settings, nodes, memo, later=67.0),
                    ),
                ],
            )
        )
    return results
