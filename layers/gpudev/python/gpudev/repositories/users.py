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

    def bind_principal(self, username: str, principal_arn: str) -> User | None:
        """The row of `username`, created bound to `principal_arn` on first sight. It is
        returned whatever principal it is bound to (the caller compares); nothing is written
        for another principal. None only if another transaction created it meanwhile."""
        with domain_errors(), self._conn.cursor(row_factory=class_row(User)) as cur:
            return cur.execute(
                query("users/bind_principal"),
                {"username": username, "principal_arn": principal_arn},
            ).fetchone()

    def get(self, username: str) -> User | None:
        with self._conn.cursor(row_factory=class_row(User)) as cur:
            return cur.execute(query("users/get"), {"username": username}).fetchone()

    def set_github_username(self, username: str, github_username: str | None) -> User | None:
        with domain_errors(), self._conn.cursor(row_factory=class_row(User)) as cur:
            return cur.execute(
                query("users/set_github_username"),
                {"username": username, "github_username": github_username},
            ).fetchone()
