"""A psycopg connection that counts the statements our code sends (used by tests that bound
round trips and by the benchmarks). COMMIT/SAVEPOINT sent by psycopg itself are not counted."""

from __future__ import annotations

from typing import Any

import psycopg


class CountingConnection:
    """Counts the statements our code sends; everything else is the real connection."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn
        self.statements = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.statements += 1
        return self._conn.execute(*args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cursor = self._conn.cursor(*args, **kwargs)
        owner = self

        class CountingCursor:
            def __enter__(self) -> CountingCursor:
                cursor.__enter__()
                return self

            def __exit__(self, *exc: Any) -> None:
                cursor.__exit__(*exc)

            def execute(self, *a: Any, **k: Any) -> Any:
                owner.statements += 1
                cursor.execute(*a, **k)
                return self

            def executemany(self, *a: Any, **k: Any) -> Any:
                owner.statements += 1
                return cursor.executemany(*a, **k)

            def __getattr__(self, name: str) -> Any:
                return getattr(cursor, name)

        return CountingCursor()
