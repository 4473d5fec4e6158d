"""The pre-puller's one read (sql/prepuller/): the images reservations asked for most in the
last days, by what their pods run (gpudev/prepuller/)."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.db.queries import query


class PrepullerRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def most_used_images(self, days: int, limit: int) -> list[str]:
        """At most `limit` images, most used first (the default image is not among them)."""
        if limit <= 0:
            return []
        rows = self._conn.execute(
            query("prepuller/most_used_images"), {"days": days, "limit": limit}
        ).fetchall()
        return [row[0] for row in rows]
