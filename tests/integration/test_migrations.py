from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gpudev.db.migrations import apply_migrations, load_migrations
from gpudev.errors import MigrationError

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def _applied(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return [
            (row[0], row[1])
            for row in conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1")
        ]


def test_migrations_apply_to_an_empty_database_then_reapply_as_a_no_op(empty_database: str):
    with psycopg.connect(empty_database, autocommit=True) as conn:
        first = apply_migrations(conn, MIGRATIONS)
        second = apply_migrations(conn, MIGRATIONS)
    assert [m.version for m in first] == [m.version for m in load_migrations(MIGRATIONS)]
    assert second == []
    assert _applied(empty_database) == [(m.version, m.name) for m in first]
    with psycopg.connect(empty_database) as conn:
        tables = {
            row[0]
            for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
    assert tables == {
        "cluster_nodes",
        "node_slots",
        "allocations",
        "schema_migrations",
        "users",
        "gpu_types",
        "reservations",
        "reservation_events",
        "disks",
        "reconciler_runs",
        "outbox",
        "gpu_capacity_history",
        "api_request_buckets",
        "change_wakes",
        "shared_file_access_points",
        "gpu_samples",
        "gpu_usage_hourly",
        "bus_events",
        "notification_contacts",
        "notification_deliveries",
        "image_builds",
        "image_build_owners",
    }


def test_an_edited_applied_migration_is_refused(empty_database: str, tmp_path: Path):
    shutil.copytree(MIGRATIONS, tmp_path / "m")
    with psycopg.connect(empty_database, autocommit=True) as conn:
        apply_migrations(conn, tmp_path / "m")
        first = sorted((tmp_path / "m").glob("*.sql"))[0]
        first.write_text(first.read_text() + "\n-- an innocent-looking edit\n")
        with pytest.raises(MigrationError, match="edited after it was applied"):
            apply_migrations(conn, tmp_path / "m")


def test_a_failing_migration_leaves_nothing_half_applied(empty_database: str, tmp_path: Path):
    shutil.copytree(MIGRATIONS, tmp_path / "m")
    (tmp_path / "m" / "9999_broken.sql").write_text(
        "CREATE TABLE half_done (id int);\nSELECT no_such_function();\n"
    )
    with psycopg.connect(empty_database, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedFunction):
            apply_migrations(conn, tmp_path / "m")
        assert conn.execute("SELECT to_regclass('half_done')").fetchone() == (None,)
        assert 9999 not in [v for v, _ in _applied(empty_database)]
        # The lock was released: a fixed migration applies.
        (tmp_path / "m" / "9999_broken.sql").write_text("CREATE TABLE half_done (id int);\n")
        assert [m.version for m in apply_migrations(conn, tmp_path / "m")] == [9999]


def test_a_migration_waits_briefly_for_a_table_lock_then_stops_with_nothing_applied(
    empty_database: str, tmp_path: Path
):
    """Queued behind a long transaction, an ALTER TABLE would make every query of the table
    queue behind it: the migration gives up its place after `lock_timeout`, retries, then
    stops the deploy with nothing of it applied; once the transaction ended it applies."""
    shutil.copytree(MIGRATIONS, tmp_path / "m")
    with psycopg.connect(empty_database, autocommit=True) as conn:
        apply_migrations(conn, tmp_path / "m")
    (tmp_path / "m" / "9999_alter.sql").write_text(
        "ALTER TABLE reservations ADD COLUMN added_later int;\n"
    )
    with (
        psycopg.connect(empty_database) as reader,  # a long read: its lock stays held
        psycopg.connect(empty_database, autocommit=True) as conn,
    ):
        reader.execute("SELECT count(*) FROM reservations").fetchone()
        with pytest.raises(MigrationError, match="waited 50 ms for a table lock 2 times"):
            apply_migrations(
                conn, tmp_path / "m", lock_timeout_ms=50, pause_seconds=0.01, attempts=2
            )
        assert 9999 not in [v for v, _ in _applied(empty_database)]
        column = "SELECT 1 FROM information_schema.columns WHERE column_name = 'added_later'"
        assert conn.execute(column).fetchone() is None
        reader.rollback()
        assert [m.version for m in apply_migrations(conn, tmp_path / "m")] == [9999]
        assert conn.execute(column).fetchone() == (1,)


def test_a_database_newer_than_the_code_is_refused(empty_database: str, tmp_path: Path):
    shutil.copytree(MIGRATIONS, tmp_path / "m")
    (tmp_path / "m" / "9999_later.sql").write_text("SELECT 1;\n")
    with psycopg.connect(empty_database, autocommit=True) as conn:
        apply_migrations(conn, tmp_path / "m")
        with pytest.raises(MigrationError, match="not on disk"):
            apply_migrations(conn, MIGRATIONS)


def test_badly_named_migration_files_are_refused(tmp_path: Path):
    (tmp_path / "1_init.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="NNNN_snake_case"):
        load_migrations(tmp_path)


def test_migrations_need_an_autocommit_connection(empty_database: str):
    with psycopg.connect(empty_database) as conn, pytest.raises(MigrationError):
        apply_migrations(conn, MIGRATIONS)


def test_concurrent_runners_apply_each_migration_exactly_once(empty_database: str):
    results: list[list[Any]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def run() -> None:
        try:
            with psycopg.connect(empty_database, autocommit=True) as conn:
                start.wait()
                results.append(apply_migrations(conn, MIGRATIONS))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    applied_counts = sorted(len(r) for r in results)
    assert applied_counts == [0, 0, 0, len(load_migrations(MIGRATIONS))]
    assert len(_applied(empty_database)) == len(load_migrations(MIGRATIONS))
