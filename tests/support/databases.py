"""Databases on the test session's PostgreSQL server: named, created (from a template or
empty) and dropped. The fixtures in tests/conftest.py and the local clouds of the e2e and
lifecycle tiers (tests/support/clouds.py) use them."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def database_url_for(server_url: str, dbname: str) -> str:
    params = conninfo_to_dict(server_url)
    params["dbname"] = dbname
    return make_conninfo(**params)


def create_database(admin: psycopg.Connection[Any], name: str, template: str | None = None) -> None:
    from psycopg import sql

    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    admin.execute(statement)


def drop_database(admin: psycopg.Connection[Any], name: str) -> None:
    from psycopg import sql

    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
