"""One connection pool per execution environment, opened at first use.

Sized for Lambda (one request at a time per environment): a couple of connections,
reused across warm invocations and checked before reuse so an Aurora failover or an idle
timeout costs one reconnect, not a failed request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gpudev.settings import DatabaseSettings, database_settings

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_pool: ConnectionPool | None = None
_lock = threading.Lock()


def conninfo(settings: DatabaseSettings, secret_reader: Callable[[str], str] | None = None) -> str:
    """The connection string: DATABASE_URL, or built from the Aurora secret."""
    if settings.database_url:
        return settings.database_url
    assert settings.db_secret_arn is not None
    if secret_reader is None:
        from gpudev.aws import aws_clients

        def secret_reader(arn: str) -> str:
            response = aws_clients().secretsmanager.get_secret_value(SecretId=arn)
            return str(response["SecretString"])

    from psycopg.conninfo import make_conninfo

    secret: dict[str, Any] = json.loads(secret_reader(settings.db_secret_arn))
    return make_conninfo(
        host=secret["host"],
        port=secret.get("port", 5432),
        user=secret["username"],
        password=secret["password"],
        dbname=secret.get("dbname", settings.db_name),
        sslmode="require",
    )


def connection_pool() -> ConnectionPool:
    global _pool
    with _lock:
        if _pool is None:
            from psycopg_pool import ConnectionPool

            settings = database_settings()
            _pool = ConnectionPool(
                conninfo(settings),
                min_size=1,
                max_size=settings.db_pool_max_size,
                kwargs={"connect_timeout": settings.db_connect_timeout_seconds},
                check=ConnectionPool.check_connection,
                open=True,
                name="gpudev",
            )
        return _pool


@contextmanager
def connection() -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection; the block runs in one transaction, committed on success."""
    with connection_pool().connection() as conn:
        yield conn


@contextmanager
def autocommit_connection() -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection where each statement commits by itself and `conn.transaction()`
    is a real transaction: for work that must commit before it signals someone else (the
    lifecycle's tasks, the allocator, the jobs consumer)."""
    with connection_pool().connection() as conn:
        conn.autocommit = True
        try:
            yield conn
        finally:
            conn.autocommit = False


def close_pool(timeout: float = 5.0) -> None:
    """Close the pool: waiting clients fail, connections in use close when returned; the
    pool's worker threads get `timeout` seconds to finish."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.close(timeout=timeout)
            _pool = None
