"""Forward-only migrations: numbered `.sql` files applied in order, once.

Each file runs in its own transaction and is recorded in `schema_migrations` with its
SHA-256. A file edited after it was applied is refused (write a new migration instead).
A session advisory lock makes concurrent runners (two deploys, a test and a deploy) apply
each migration exactly once: the second waits, then finds nothing left to do.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from gpudev.db.queries import query
from gpudev.errors import MigrationError

# Any constant shared by every runner; chosen once, never changed.
MIGRATION_LOCK_KEY = 7_216_004_001
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


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


def apply_migrations(conn: psycopg.Connection[Any], directory: Path) -> list[Migration]:
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
            with conn.transaction():
                conn.execute(migration.sql.encode())
                conn.execute(
                    query("migrations/record"),
                    {
                        "version": migration.version,
                        "name": migration.name,
                        "checksum": migration.checksum,
                    },
                )
            done.append(migration)
        return done
    finally:
        conn.execute(query("migrations/unlock"), {"key": MIGRATION_LOCK_KEY})
