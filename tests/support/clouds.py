"""A local cloud on its own database of the test session's PostgreSQL: the e2e and lifecycle
tiers each start one (package-scoped, so the two never overlap), with `package_cloud`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

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


def package_cloud(
    database: str, options: Options, deployment: Deployment
) -> Callable[..., Iterator[LocalCloud]]:
    """The package-scoped `local_cloud` fixture of a tier: assign it in the tier's conftest."""

    @pytest.fixture(scope="package")
    def local_cloud(
        postgres_url: str,
        admin_conn: psycopg.Connection[Any],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[LocalCloud]:
        state_dir = tmp_path_factory.mktemp(database)
        with running_cloud(
            admin_conn, postgres_url, state_dir, database, options, deployment
        ) as cloud:
            yield cloud

    return local_cloud
