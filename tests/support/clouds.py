"""A local cloud on its own database of the test session's PostgreSQL: the e2e and lifecycle
tiers each start one (package-scoped, so the two never overlap)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg

from cdk_app.declaration import Deployment
from localcloud.stack import LocalCloud, Options
from tests.support.databases import create_database, database_url_for, drop_database


@contextmanager
def running_cloud(
    admin_conn: psycopg.Connection[Any],
    postgres_url: str,
    state_dir: Path,
    database: str,
    options: Options,
    deployment: Deployment,
) -> Iterator[LocalCloud]:
    """A local cloud on its own database of the session's PostgreSQL, removed afterwards."""
    drop_database(admin_conn, database)
    create_database(admin_conn, database)
    cloud = LocalCloud(
        state_dir,
        replace(options, database_url=database_url_for(postgres_url, database)),
        deployment=deployment,
    ).start()
    try:
        yield cloud
    finally:
        cloud.stop()
        drop_database(admin_conn, database)
