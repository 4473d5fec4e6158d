"""Per-test database isolation: rolled-back transaction vs template-database clone.

Prints the mean cost of each strategy over N rounds on the embedded server, so the choice
in tests/conftest.py (rollback by default, clones only when a test must commit) rests on
a measurement taken in this run (docs/decisions.md records one).
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from gpudev.db.migrations import apply_migrations
from localcloud.postgres import EmbeddedPostgres

ROOT = Path(__file__).resolve().parent.parent

ROUNDS = 30


def main() -> None:
    server = EmbeddedPostgres(ROOT / ".local" / "bench-postgres" / "data")
    with server, psycopg.connect(server.admin_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS bench_template WITH (FORCE)")
        admin.execute("CREATE DATABASE bench_template")
        url = server.admin_url.rsplit("/", 1)[0] + "/bench_template"
        with psycopg.connect(url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")

        rollback = []
        with psycopg.connect(url) as conn:
            for _ in range(ROUNDS):
                start = time.perf_counter()
                with conn.transaction(force_rollback=True):
                    conn.execute("SELECT 1")
                rollback.append(time.perf_counter() - start)

        clone = []
        for _ in range(ROUNDS):
            name = sql.Identifier(f"bench_{uuid.uuid4().hex[:8]}")
            start = time.perf_counter()
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE bench_template").format(name))
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(name))
            clone.append(time.perf_counter() - start)

    mean_rollback = statistics.mean(rollback) * 1000
    mean_clone = statistics.mean(clone) * 1000
    print(f"rounds                       {ROUNDS}")
    print(f"rolled-back transaction      {mean_rollback:8.3f} ms per test")
    print(f"template clone + drop        {mean_clone:8.3f} ms per test")
    print(f"ratio clone / rollback       {mean_clone / mean_rollback:8.0f}x")


if __name__ == "__main__":
    main()
