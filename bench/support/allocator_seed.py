"""bench/allocator.py's seeded database: h100 nodes, 90% of them fully held by active
reservations ending over the next 8 hours, and the queue; copies made from it by template."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.db.migrations import apply_migrations
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake

ROOT = Path(__file__).resolve().parents[2]
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


def create_database(admin_url: str, name: str, template: str | None = None) -> str:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    if template is None:
        with psycopg.connect(url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")
    return url


def h100_nodes(count: int) -> list[Node]:
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


def seed_database(url: str, settings: LifecycleSettings, queued: int, nodes: int) -> None:
    rng = random.Random(7)
    busy = int(nodes * BUSY_SHARE)
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        Allocator(conn, CountingSignals(), settings).run(h100_nodes(nodes), [], set())  # type: ignore[arg-type]
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
