from __future__ import annotations

from typing import Any

import psycopg

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.db.rows import fetch_one
from gpudev.models import User


class UsersRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def bind_principal(self, username: str, principal_arn: str) -> User | None:
        """The row of `username`, created bound to `principal_arn` on first sight. It is
        returned whatever principal it is bound to (the caller compares); nothing is written
        for another principal. None only if another transaction created it meanwhile."""
        return self._write("users/bind_principal", username=username, principal_arn=principal_arn)

    def take_request_lock(self, username: str) -> None:
        """The caller's request lock until the transaction ends (users/request_lock.sql):
        the first statement of a submit and of a disk rename or delete."""
        self._conn.execute(query("users/request_lock"), {"user_id": username})

    def get(self, username: str) -> User | None:
        return fetch_one(self._conn, "users/get", User, {"username": username})

    def set_github_username(self, username: str, github_username: str | None) -> User | None:
        return self._write(
            "users/set_github_username", username=username, github_username=github_username
        )

    def _write(self, name: str, **params: Any) -> User | None:
        """A statement writing a user's row: the row, a refused constraint raised as its
        domain error."""
        with domain_errors():
            return fetch_one(self._conn, name, User, params)
