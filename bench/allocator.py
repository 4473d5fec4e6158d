"""One allocator pass over 10,000 queued reservations and 1,000 nodes, beside a naive
per-reservation pass run on the same data in the same process.

Cluster: 1,000 h100 nodes (8 GPUs each); 900 of them are fully held by active reservations
ending over the next 8 hours, the other 100 are free. Queue: 10,000 reservations of 1, 2, 4
or 8 GPUs (some multinode 16), FIFO by creation time.

- ours: one node sync, three reads, one INSERT ... unnest for every grant, one UPDATE ...
  unnest for every position and ETA (EASY backfill and ETAs computed in memory);
- naive: what a per-row implementation does: for each queued reservation, read the free
  slots, then write its grant or its position (one statement per slot granted).

Each runs on its own copy of the same seeded database (CREATE DATABASE … TEMPLATE). SQL
statements are counted on the connection. Run: `make bench`.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.db.migrations import apply_migrations
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake
from localcloud.postgres import EmbeddedPostgres
from tests.support.counting import CountingConnection

ROOT = Path(__file__).resolve().parent.parent
NODES, BUSY_NODES, QUEUED = 1_000, 900, 10_000
NOW = datetime.now(UTC)


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


def _nodes() -> list[Node]:
    return [
        Node(f"node-{i:04d}", "h100", True, False, 8, internal_ip=f"10.1.{i // 250}.{i % 250}")
        for i in range(NODES)
    ]


def _seed(url: str, settings: LifecycleSettings) -> None:
    rng = random.Random(7)
    with psycopg.connect(url, autocommit=True) as conn:
        Allocator(conn, CountingSignals(), settings).run(_nodes(), [], set())  # type: ignore[arg-type]
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('bench', 'arn:bench')")
        active = [
            (uuid.uuid4(), NOW - timedelta(hours=1), NOW + timedelta(minutes=rng.randint(1, 480)))
            for _ in range(BUSY_NODES)
        ]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
                " duration_hours, launched_at, expires_at, granted_at)"
                " VALUES (%s, 'bench', 'active', 'h100', 8, 9, %s, %s, %s)",
                [(rid, launched, expires, launched) for rid, launched, expires in active],
            )
            cur.executemany(
                "INSERT INTO allocations (node_name, slot, reservation_id) VALUES (%s, %s, %s)",
                [
                    (f"node-{i:04d}", slot, rid)
                    for i, (rid, _, _) in enumerate(active)
                    for slot in range(8)
                ],
            )
            queued = []
            for n in range(QUEUED):
                gpus = rng.choice([1, 2, 4, 8, 8, 16])
                queued.append(
                    (
                        uuid.uuid4(),
                        gpus,
                        2 if gpus == 16 else 1,
                        rng.choice([0.5, 1, 2, 4, 8]),
                        NOW - timedelta(seconds=QUEUED - n),
                        f"token-{n}",
                    )
                )
            cur.executemany(
                "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
                " total_nodes, duration_hours, created_at, task_token)"
                " VALUES (%s, 'bench', 'queued', 'h100', %s, %s, %s, %s, %s)",
                queued,
            )


def _ours(conn: Any, settings: LifecycleSettings) -> tuple[int, int]:
    signals = CountingSignals()
    report = Allocator(conn, signals, settings).run(_nodes(), [], set())  # type: ignore[arg-type]
    return len(report.granted), signals.sent


def _naive(conn: Any) -> tuple[int, int]:
    """Per reservation: read free slots of its type, then grant slot by slot or record a
    position (a 15-minutes-per-position guess, as the reference does)."""
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
                "UPDATE reservations SET queue_position = %s, estimated_wait_minutes = %s"
                " WHERE reservation_id = %s",
                (position, position * 15, reservation_id),
            )
    return granted, 0


def main() -> None:
    settings = LifecycleSettings()
    with EmbeddedPostgres(ROOT / ".local" / "bench-postgres" / "data") as server:
        _seed(_database(server.admin_url, "bench_allocator_seed"), settings)
        results = {}
        for name in ("ours", "naive"):
            url = _database(server.admin_url, f"bench_allocator_{name}", "bench_allocator_seed")
            with psycopg.connect(url) as raw:
                conn = CountingConnection(raw)
                start = time.perf_counter()
                granted, signals = _ours(conn, settings) if name == "ours" else _naive(conn)
                elapsed = time.perf_counter() - start
                results[name] = (elapsed, conn.statements, granted, signals)
    print(
        f"allocator pass: {QUEUED:,} queued reservations, {NODES:,} h100 nodes "
        f"({BUSY_NODES} fully held)"
    )
    for name, (elapsed, statements, granted, signals) in results.items():
        print(
            f"  {name:5}  {elapsed:7.2f} s  {statements:6,} SQL statements  "
            f"{granted:4} granted  {signals} signals"
        )
    ours, naive = results["ours"], results["naive"]
    print(
        f"  ratio  {naive[0] / ours[0]:.1f}x time, {naive[1] / max(1, ours[1]):,.0f}x statements"
        " (naive also estimates waits as 15 min per position; ours replays known end times)"
    )


if __name__ == "__main__":
    main()
