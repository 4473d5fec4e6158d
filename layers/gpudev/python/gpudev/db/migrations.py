"""Forward-only migrations: numbered `.sql` files applied in order, once.

Each file runs in its own transaction and is recorded in `schema_migrations` with its
SHA-256. A file edited after it was applied is refused (write a new migration instead).
A session advisory lock makes concurrent runners (two deploys, a test and a deploy) apply
each migration exactly once: the second waits, then finds nothing left to do.

A migration that alters a live table needs its lock at once or not at all: queued behind a
long transaction, an `ALTER TABLE` would make every query of that table queue behind it. So
each migration waits at most `lock_timeout` for a lock, and is retried a few times after a
pause; after that the deploy stops with nothing of that migration applied.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from gpudev.db.queries import query
from gpudev.errors import MigrationError

# Any constant shared by every runner; chosen once, never changed.
MIGRATION_LOCK_KEY = 7_216_004_001
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
LOCK_TIMEOUT_MS = 5_000  # what a migration may wait for a table lock, per attempt
LOCK_ATTEMPTS = 4
LOCK_RETRY_PAUSE_SECONDS = 5.0


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def default_migrations_dir() -> Path:
    """`migrations/` shipped at the layer root in Lambda (/opt), else the repository's."""
    from gpudev.settings import database_settings

    configured = database_settings().migrations_dir
    if configured:
        return configured
    for candidate in (Path("/opt/migrations"), Path(__file__).resolve().parents[5] / "migrations"):
        if candidate.is_dir():
            return candidate
    raise MigrationError("no migrations directory found; set MIGRATIONS_DIR")


def load_migrations(directory: Path) -> list[Migration]:
    migrations = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNNN_snake_case.sql")
        migrations.append(Migration(int(match[1]), match[2], path.read_text()))
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migration files share a version number in {directory}")
    return migrations


def apply_migrations(
    conn: psycopg.Connection[Any],
    directory: Path,
    lock_timeout_ms: int = LOCK_TIMEOUT_MS,
    attempts: int = LOCK_ATTEMPTS,
    pause_seconds: float = LOCK_RETRY_PAUSE_SECONDS,
) -> list[Migration]:
    """Apply what is not applied yet; return what was applied. `conn` must be autocommit."""
    if not conn.autocommit:
        raise MigrationError("apply_migrations needs an autocommit connection")
    migrations = load_migrations(directory)
    conn.execute(query("migrations/lock"), {"key": MIGRATION_LOCK_KEY})
    try:
        conn.execute(query("migrations/create_table"))
        applied = {
            row[0]: (row[1], row[2]) for row in conn.execute(query("migrations/applied")).fetchall()
        }
        on_disk = {m.version for m in migrations}
        unknown = sorted(set(applied) - on_disk)
        if unknown:
            raise MigrationError(
                f"the database has migrations {unknown} that are not on disk: "
                "is this code older than the database?"
            )
        done = []
        for migration in migrations:
            if migration.version in applied:
                name, checksum = applied[migration.version]
                if checksum != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.version:04d}_{name} was edited after it was "
                        "applied; migrations are forward-only, add a new one instead"
                    )
                continue
            for attempt in range(1, attempts + 1):
                try:
                    _apply(conn, migration, lock_timeout_ms)
                    break
                except psycopg.errors.LockNotAvailable as waited:
                    if attempt == attempts:
                        raise MigrationError(
                            f"migration {migration.version:04d}_{migration.name} waited "
                            f"{lock_timeout_ms} ms for a table lock {attempts} times (a long "
                            "transaction holds it?); nothing of it was applied: deploy again"
                        ) from waited
                    time.sleep(pause_seconds)
            done.append(migration)
        return done
    finally:
        conn.execute(query("migrations/unlock"), {"key": MIGRATION_LOCK_KEY})


def _apply(conn: psycopg.Connection[Any], migration: Migration, lock_timeout_ms: int) -> None:
    with conn.transaction():
        conn.execute(query("migrations/lock_timeout"), {"timeout": f"{lock_timeout_ms}ms"})
        conn.execute(migration.sql.encode())
        conn.execute(
            query("migrations/record"),
            {"version": migration.version, "name": migration.name, "checksum": migration.checksum},
        )
