"""The allocator's pass as the queue grows (1,000 queued on 1,000 nodes, 10,000 on 1,000,
100,000 on 5,000), beside a naive per-reservation pass run on the 1,000-queued data in the
same process. Every scale runs `--runs` times (default 5), each on a fresh copy of the same
seeded database and with a fresh plan memo; min and median are printed (the machine is
shared).

Cluster: h100 nodes (8 GPUs each); 90% of them are fully held by active reservations ending
over the next 8 hours, the rest are free. Queue: reservations of 1, 2, 4 or 8 GPUs (some
multinode 16), FIFO by creation time. Each run is a first pass (every position and estimated
start written), the next pass 5 s later (its grants' ends now read back from their rows: the
same ends the first pass planned, so it writes nothing), a pass a minute later with nothing
changed (steady state: starts are moments, so nothing is written, and the plan of the
previous pass is reused, as in a warm Lambda environment), the same pass with an empty
plan memo (a cold environment: the whole plan computed), and a pass after the active
reservation that ends first ends early (tear down released its node: its grants and every
start behind them move, a realistic worst case for the write). Wall time is printed beside the
benchmark process's CPU time (wall time includes waiting for a core).

- ours: one node sync, three reads, one INSERT ... unnest for every grant, one UPDATE ...
  unnest for the positions and estimated starts that changed (EASY backfill and ETAs
  computed in memory);
- naive: what a per-row implementation does: for each queued reservation, read the free
  slots, then write its grant or its position (one statement per slot granted).

Each runs on its own copy of the same seeded database (CREATE DATABASE … TEMPLATE). SQL
statements are counted on the connection. Run: `make bench`, or `bench/allocator.py --quick`
(1,000 and 10,000 queued only), `--queued 100000` (that scale only).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import psycopg

from gpudev.allocation.memo import PlanMemo
from gpudev.allocation.service import Allocator, release_allocation
from gpudev.cluster.vocabulary import Node
from gpudev.db.migrations import apply_migrations
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake
from localcloud.postgres import EmbeddedPostgres
from tests.support.counting import CountingConnection

ROOT = Path(__file__).resolve().parent.parent
SCALES = ((1_000, 1_000), (10_000, 1_000), (100_000, 5_000))  # (queued, nodes)
BUSY_SHARE = 0.9
# The soonest seeded expiry, in minutes from the seed: later than every pass of every run
# (the last, a minute later by the allocator's clock, comes a few minutes after the seed on a
# loaded machine), so those passes see no reservation end (nothing changed).
FIRST_EXPIRY_MINUTES = 30


class CountingSignals:
    def __init__(self) -> None:
        self.sent = 0

    def wake(self, task_token: str, wake: Wake) -> bool:
        self.sent += 1
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        return True


def _database(admin_url: str, name: str, template: str | None = None) -> str:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    if template is None:
        with psycopg.connect(url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")
    return url


def _nodes(count: int) -> list[Node]:
    return [
        Node(
            f"node-{i:05d}",
            "h100",
            True,
            False,
            8,
            internal_ip=f"10.{i // 62500}.{i // 250 % 250}.{i % 250}",
        )
        for i in range(count)
    ]


def _seed(url: str, settings: LifecycleSettings, queued: int, nodes: int) -> None:
    rng = random.Random(7)
    busy = int(nodes * BUSY_SHARE)
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        Allocator(conn, CountingSignals(), settings).run(_nodes(nodes), [], set())  # type: ignore[arg-type]
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('bench', 'arn:bench')")
        active = [
            (
                uuid.uuid4(),
                now - timedelta(hours=1),
                now + timedelta(minutes=rng.randint(FIRST_EXPIRY_MINUTES, 480)),
            )
            for _ in range(busy)
        ]
        with conn.cursor() as cur:
            with cur.copy(
                "COPY reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
                " duration_hours, launched_at, expires_at, granted_at) FROM STDIN"
            ) as copy:
                for rid, launched, expires in active:
                    copy.write_row(
                        (rid, "bench", "active", "h100", 8, 9, launched, expires, launched)
                    )
            with cur.copy("COPY allocations (node_name, slot, reservation_id) FROM STDIN") as copy:
                for i, (rid, _, _) in enumerate(active):
                    for slot in range(8):
                        copy.write_row((f"node-{i:05d}", slot, rid))
            with cur.copy(
                "COPY reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
                " total_nodes, duration_hours, created_at, task_token) FROM STDIN"
            ) as copy:
                for n in range(queued):
                    gpus = rng.choice([1, 2, 4, 8, 8, 16])
                    copy.write_row(
                        (
                            uuid.uuid4(),
                            "bench",
                            "queued",
                            "h100",
                            gpus,
                            2 if gpus == 16 else 1,
                            rng.choice([0.5, 1, 2, 4, 8]),
                            now - timedelta(seconds=queued - n),
                            f"token-{n}",
                        )
                    )
        conn.execute("VACUUM ANALYZE")


def _ours(
    conn: Any, settings: LifecycleSettings, nodes: list[Node], memo: PlanMemo, later: float = 0.0
) -> tuple[int, int]:
    """One pass, `later` seconds from now by the allocator's clock; (granted, rows written)."""
    allocator = Allocator(
        conn, CountingSignals(), settings, clock=lambda: time.time() + later, memo=memo
    )
    report = allocator.run(nodes, [], set())  # type: ignore[arg-type]
    return len(report.granted), report.waits_written


def _end_early(conn: Any) -> None:
    """Tear down of the active reservation that was to end first (its user cancelled it):
    the node it held is free now, half an hour before the planner expected it (not timed)."""
    with conn.transaction():
        (reservation_id,) = conn.execute(
            "SELECT reservation_id FROM reservations WHERE status = 'active'"
            " ORDER BY expires_at, reservation_id LIMIT 1"
        ).fetchone()
        release_allocation(conn, reservation_id)
        conn.execute(
            "UPDATE reservations SET status = 'cancelled', cancelled_at = now(),"
            " reservation_ended = now()"
            " WHERE reservation_id = %s",
            (reservation_id,),
        )


def _naive(conn: Any) -> tuple[int, int]:
    """Per reservation: read free slots of its type, then grant slot by slot or record a
    position (a 15-minutes-per-position guess, as the reference does); one transaction."""
    with conn.transaction():
        return _naive_pass(conn)


def _naive_pass(conn: Any) -> tuple[int, int]:
    queue = conn.execute(
        "SELECT reservation_id, gpu_count, total_nodes FROM reservations"
        " WHERE status = 'queued' AND granted_at IS NULL ORDER BY created_at"
    ).fetchall()
    granted = position = 0
    for reservation_id, gpus, nodes in queue:
        free = conn.execute(
            "SELECT s.node_name, array_agg(s.slot ORDER BY s.slot) FROM node_slots s"
            " JOIN cluster_nodes n USING (node_name)"
            " WHERE n.gpu_type = 'h100' AND n.schedulable AND NOT EXISTS (SELECT 1 FROM"
            " allocations a WHERE a.node_name = s.node_name AND a.slot = s.slot)"
            " GROUP BY s.node_name"
        ).fetchall()
        per_node = gpus // nodes
        fits = [(name, slots) for name, slots in free if len(slots) >= per_node][:nodes]
        if len(fits) == nodes and position == 0:
            for name, slots in fits:
                for slot in slots[:per_node]:
                    conn.execute(
                        "INSERT INTO allocations (node_name, slot, reservation_id)"
                        " VALUES (%s, %s, %s)",
                        (name, slot, reservation_id),
                    )
            conn.execute(
                "UPDATE reservations SET granted_at = now() WHERE reservation_id = %s",
                (reservation_id,),
            )
            granted += 1
        else:
            position += 1
            conn.execute(
                "UPDATE reservations SET queue_position = %s,"
                " estimated_start_at = now() + %s * interval '15 minutes'"
                " WHERE reservation_id = %s",
                (position, position, reservation_id),
            )
    return granted, position


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


def _measure(url: str, runs: list[Run | tuple[Callable[[Any], None], Run]]) -> list[Measured]:
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


def _runs_of_ours(
    admin_url: str, settings: LifecycleSettings, count: int, runs: int
) -> list[list[Measured]]:
    """Per run, the four passes (PASSES) on a fresh copy of the seed."""
    nodes = _nodes(count)
    results = []
    for _ in range(runs):
        url = _database(admin_url, "bench_allocator_ours", "bench_allocator_seed")
        memo = PlanMemo()
        results.append(
            _measure(
                url,
                [
                    lambda conn, memo=memo: _ours(conn, settings, nodes, memo),
                    lambda conn, memo=memo: _ours(conn, settings, nodes, memo, later=5.0),
                    lambda conn, memo=memo: _ours(conn, settings, nodes, memo, later=65.0),
                    lambda conn: _ours(conn, settings, nodes, PlanMemo(), later=66.0),
                    (
                        _end_early,
                        lambda conn, memo=memo: _ours(conn, settings, nodes, memo, later=67.0),
                    ),
                ],
            )
        )
    return results


def _row(label: str, runs: list[Measured]) -> str:
    walls = [m.wall for m in runs]
    last = runs[-1]
    written = sorted({m.written for m in runs})  # the same in every run, unless one moved
    return (
        f"  {label:30} {min(walls):6.3f} / {statistics.median(walls):6.3f} s wall"
        f" (in SQL {statistics.median(m.sql for m in runs):6.3f} s)"
        f" {statistics.median(m.cpu for m in runs):6.3f} s cpu"
        f"  {last.statements:5,} statements  {last.granted:3} granted"
        f"  {'–'.join(f'{w:,}' for w in written):>7} rows written"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only 1,000 and 10,000 queued")
    parser.add_argument("--runs", type=int, default=5, help="runs per scale (default 5)")
    parser.add_argument("--queued", type=int, help="only the scale with this many queued")
    args = parser.parse_args()
    scales = SCALES[:2] if args.quick else SCALES
    if args.queued is not None:
        scales = tuple(scale for scale in scales if scale[0] == args.queued)
        if not scales:
            parser.error(f"--queued: one of {', '.join(str(q) for q, _ in SCALES)}")
    settings = LifecycleSettings()
    print(
        "allocator pass: h100 nodes of 8 GPUs, 90% fully held; the first pass writes every"
        f" position and estimated start, the next ones only what changed; {args.runs} runs,"
        " wall min / median, the rest medians"
    )
    medians: list[tuple[int, list[float]]] = []
    with EmbeddedPostgres(ROOT / ".local" / "bench-postgres" / "data") as server:
        for queued, count in scales:
            seed = _database(server.admin_url, "bench_allocator_seed")
            _seed(seed, settings, queued, count)
            runs = _runs_of_ours(server.admin_url, settings, count, args.runs)
            passes = [[run[i] for run in runs] for i in range(len(PASSES))]
            for i, label in enumerate(PASSES):
                title = f"ours {queued:>7,} queued {count:>5,} nodes" if i == 0 else label
                print(_row(title, passes[i]))
            medians.append((queued, [statistics.median(m.wall for m in p) for p in passes]))
            if queued == SCALES[0][0]:
                naive = []
                for _ in range(min(args.runs, 3)):
                    url = _database(
                        server.admin_url, "bench_allocator_naive", "bench_allocator_seed"
                    )
                    naive += _measure(url, [_naive])
                print(_row(f"naive {queued:>6,} queued {count:>5,} nodes", naive))
                naive_wall = statistics.median(m.wall for m in naive)
                first, steady = medians[0][1][0], medians[0][1][2]
                print(
                    f"  ratio (median wall): naive / our first pass {naive_wall / first:.0f}x,"
                    f" / our pass a minute later {naive_wall / steady:.0f}x;"
                    f" {naive[-1].statements / max(1, passes[0][-1].statements):,.0f}x"
                    " statements (naive also estimates waits as 15 min per position; ours"
                    " replays known end times)"
                )
    print(
        "  growth, median wall per 1,000 queued"
        " (first pass / a minute later / empty memo / after an early end):"
    )
    for queued, walls in medians:
        per = [w / queued * 1e6 for w in walls]
        print(
            f"    {queued:>7,} queued: {per[0]:6.1f} / {per[2]:6.1f} / {per[3]:6.1f}"
            f" / {per[4]:6.1f} ms"
        )


if __name__ == "__main__":
    main()
