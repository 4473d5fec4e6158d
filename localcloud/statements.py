"""SQL statements counted per thread, for the benchmarks: every statement our code sends goes
through a psycopg cursor's execute/executemany (a connection's `execute` makes a cursor).
Installed on the library's class for the process that asks for it only (bench/api_load.py's
cloud, or an API process started with COUNT_STATEMENTS_VARIABLE set)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

COUNT_STATEMENTS_VARIABLE = "LOCALCLOUD_COUNT_STATEMENTS"


class StatementCounter:
    def __init__(self) -> None:
        import psycopg

        self._local = threading.local()
        for name in ("execute", "executemany"):
            original = getattr(psycopg.Cursor, name)
            setattr(psycopg.Cursor, name, self._counted(original))

    def _counted(self, original: Callable[..., Any]) -> Callable[..., Any]:
        local = self._local

        def counted(cursor: Any, *args: Any, **kwargs: Any) -> Any:
            local.count = getattr(local, "count", 0) + 1
            return original(cursor, *args, **kwargs)

        return counted

    @property
    def count(self) -> int:
        """Statements sent so far on the calling thread."""
        return getattr(self._local, "count", 0)
