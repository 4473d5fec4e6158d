"""The users' access points (`shared_file_access_points`, migrations/0038). Takes a
connection, never commits: the service holds the row lock in its own transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query


@dataclass(frozen=True)
class AccessPointRow:
    user_id: str
    file_system_id: str
    client_token: str
    access_point_id: str | None
    created_at: datetime
    ready_at: datetime | None


class AccessPointsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _one(self, name: str, params: dict[str, Any]) -> AccessPointRow | None:
        with self._conn.cursor(row_factory=class_row(AccessPointRow)) as cur:
            return cur.execute(query(f"shared_files/{name}"), params).fetchone()

    def claim(self, user_id: str, file_system_id: str, client_token: str) -> None:
        params = {
            "user_id": user_id,
            "file_system_id": file_system_id,
            "client_token": client_token,
        }
        self._conn.execute(query("shared_files/claim"), params)

    def locked(self, user_id: str, file_system_id: str) -> AccessPointRow | None:
        return self._one("locked", {"user_id": user_id, "file_system_id": file_system_id})

    def of_user(self, user_id: str, file_system_id: str) -> AccessPointRow | None:
        return self._one("of_user", {"user_id": user_id, "file_system_id": file_system_id})

    def record(
        self, user_id: str, file_system_id: str, access_point_id: str
    ) -> AccessPointRow | None:
        return self._one(
            "record",
            {
                "user_id": user_id,
                "file_system_id": file_system_id,
                "access_point_id": access_point_id,
            },
        )

    def forget(
        self, user_id: str, file_system_id: str, gone: str, client_token: str
    ) -> AccessPointRow | None:
        return self._one(
            "forget",
            {
                "user_id": user_id,
                "file_system_id": file_system_id,
                "gone": gone,
                "client_token": client_token,
            },
        )
