from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.models import User


class UsersRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def upsert_principal(self, username: str, principal_arn: str) -> User:
        """The caller's row, created on first sight; a known principal refreshes last_seen_at."""
        with domain_errors(), self._conn.cursor(row_factory=class_row(User)) as cur:
            row = cur.execute(
                query("users/upsert_principal"),
                {"username": username, "principal_arn": principal_arn},
            ).fetchone()
        assert row is not None
        return row

    def get(self, username: str) -> User | None:
        with self._conn.cursor(row_factory=class_row(User)) as cur:
            return cur.execute(query("users/get"), {"username": username}).fetchone()

    def set_github_username(self, username: str, github_username: str | None) -> User | None:
        with domain_errors(), self._conn.cursor(row_factory=class_row(User)) as cur:
            return cur.execute(
                query("users/set_github_username"),
                {"username": username, "github_username": github_username},
            ).fetchone()
