"""Fixtures shared by every tier.

PostgreSQL: one server per test session (embedded, or DATABASE_URL's), a template
database migrated once, and per-test isolation by a rolled-back transaction (~0.2 ms; see
docs/decisions.md). Tests that must commit or use several connections take
`fresh_database`, a clone of the template (~30-60 ms).

Logs: what the local cloud and the functions log goes to one file per session
(tests/support/test_logs.py), named at the end of a failing run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gpudev.db.migrations import apply_migrations
from tests.support.databases import create_database, database_url_for, drop_database
from tests.support.test_logs import route_logs, session_log

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "migrations"
TEMPLATE_DB = "gpudev_template"
TEST_LOG = session_log()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_LOG_STREAM] = route_logs(TEST_LOG)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int) -> None:
    if exitstatus:
        where = TEST_LOG.relative_to(ROOT) if TEST_LOG.is_relative_to(ROOT) else TEST_LOG
        terminalreporter.write_line(f"the local cloud's and the functions' logs: {where}")


_LOG_STREAM = pytest.StashKey[Any]()


@contextmanager
def _database(
    postgres_url: str, admin_conn: psycopg.Connection[Any], prefix: str, template: str | None = None
) -> Iterator[str]:
    """URL of a new database named `prefix` and a random suffix (a clone of `template`, if
    given), dropped on leaving."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    create_database(admin_conn, name, template=template)
    yield database_url_for(postgres_url, name)
    drop_database(admin_conn, name)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a server we may create databases on."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    from localcloud.postgres import EmbeddedPostgres, stop_stale_server

    # `make test` runs two sessions at once (tools/test_tiers.py), each on its own directory:
    # a session stops the server a killed run left on its directory before starting its own.
    base = ROOT / os.environ.get("PYTEST_POSTGRES_DIR", ".local/pytest-postgres")
    stop_stale_server(base / "data")
    shutil.rmtree(base, ignore_errors=True)
    with EmbeddedPostgres(base / "data") as server:
        yield server.admin_url


@pytest.fixture(scope="session")
def admin_conn(postgres_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="session")
def template_url(postgres_url: str, admin_conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A database with every migration applied; cloned, never used directly."""
    drop_database(admin_conn, TEMPLATE_DB)
    create_database(admin_conn, TEMPLATE_DB)
    url = database_url_for(postgres_url, TEMPLATE_DB)
    with psycopg.connect(url, autocommit=True) as conn:
        apply_migrations(conn, MIGRATIONS)
    yield url
    drop_database(admin_conn, TEMPLATE_DB)


@pytest.fixture(scope="session")
def migrated_clone(
    postgres_url: str, template_url: str, admin_conn: psycopg.Connection[Any]
) -> Callable[[str], AbstractContextManager[str]]:
    """Opens a clone of the migrated template named after `prefix`, dropped on leaving."""
    return partial(_database, postgres_url, admin_conn, template=TEMPLATE_DB)


@pytest.fixture(scope="session")
def database_url(migrated_clone: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    """The migrated database that rolled-back tests share."""
    with migrated_clone("gpudev_test") as url:
        yield url


@pytest.fixture
def db(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection whose every change is rolled back when the test ends."""
    with psycopg.connect(database_url) as conn, conn.transaction(force_rollback=True):
        yield conn


@pytest.fixture
def fresh_database(migrated_clone: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    """URL of a private migrated database, for tests that commit or use several connections."""
    with migrated_clone("gpudev_fresh") as url:
        yield url


@pytest.fixture
def empty_database(postgres_url: str, admin_conn: psycopg.Connection[Any]) -> Iterator[str]:
    with _database(postgres_url, admin_conn, "gpudev_empty") as url:
        yield url
