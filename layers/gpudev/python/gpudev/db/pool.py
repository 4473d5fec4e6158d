"""One connection pool per execution environment, opened at first use.

Sized for Lambda (one request at a time per environment): a couple of connections,
reused across warm invocations and checked before reuse so an Aurora failover or an idle
timeout costs one reconnect, not a failed request. The check is a round trip only for a
connection that sat in the pool `CHECK_IDLE_SECONDS` or more (wall time, so the time a
frozen environment slept counts) or whose socket shows the server closed it; one returned
moments ago by the previous request goes out without one (`RecentUseCheck`, and the
reasoning about failovers in docs/decisions.md).

How a connection logs in (docs/architecture.md "Security model / Database"):

- `DATABASE_URL` (local cloud, tests): as written.
- `DB_HOST` + `DB_IAM_USER` (every function in AWS but the migrations): the function group's
  login role with IAM database authentication. The password is a token signed with the
  function's credentials, valid 15 minutes, so the pool asks for a fresh one at each new
  connection (psycopg_pool calls `kwargs` when it is a callable).
- `DB_SECRET_ARN` (the migration function): the master user from the Aurora secret.

In AWS TLS verifies the server: `sslmode=verify-full` against the RDS CA bundle the layer
ships (`/opt/certs/rds-global-bundle.pem`). Every connection starts with its
`statement_timeout` and `lock_timeout` set by the startup packet's `options`, which costs no
round trip. Waiting for a pooled connection is bounded by `DB_POOL_TIMEOUT_SECONDS`; the
limits surface as `DatabaseBusy` / `DatabaseUnavailable` (db/constraints.py).
"""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from gpudev.settings import DatabaseSettings, database_settings

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from gpudev.aws import AwsClients

_pool: ConnectionPool | None = None
_lock = threading.Lock()

TokenFactory = Callable[[DatabaseSettings], str]


def _tls(settings: DatabaseSettings) -> dict[str, str]:
    return {"sslmode": "verify-full", "sslrootcert": settings.db_ssl_root_cert}


def conninfo(settings: DatabaseSettings, secret_reader: Callable[[str], str] | None = None) -> str:
    """The connection string without a password for IAM auth (the token is a kwarg):
    DATABASE_URL, the group's login role at DB_HOST, or the Aurora master secret."""
    if settings.database_url:
        return settings.database_url
    from psycopg.conninfo import make_conninfo

    if settings.db_host and settings.db_iam_user:
        return make_conninfo(
            host=settings.db_host,
            port=settings.db_port,
            user=settings.db_iam_user,
            dbname=settings.db_name,
            **_tls(settings),
        )
    assert settings.db_secret_arn is not None
    if secret_reader is None:
        from gpudev.aws import aws_clients

        def secret_reader(arn: str) -> str:
            response = aws_clients().secretsmanager.get_secret_value(SecretId=arn)
            return str(response["SecretString"])

    secret: dict[str, Any] = json.loads(secret_reader(settings.db_secret_arn))
    return make_conninfo(
        host=secret["host"],
        port=secret.get("port", 5432),
        user=secret["username"],
        password=secret["password"],
        dbname=secret.get("dbname", settings.db_name),
        **_tls(settings),
    )


def iam_auth_token(settings: DatabaseSettings, clients: AwsClients | None = None) -> str:
    """An IAM database authentication token for DB_IAM_USER (signed locally by botocore
    with the function's role; it needs `rds-db:connect` on that user)."""
    if clients is None:
        from gpudev.aws import aws_clients

        clients = aws_clients()
    return str(
        clients.rds.generate_db_auth_token(
            DBHostname=settings.db_host,
            Port=settings.db_port,
            DBUsername=settings.db_iam_user,
            Region=clients.region,
        )
    )


def connect_kwargs(
    settings: DatabaseSettings, token_factory: TokenFactory | None = None
) -> dict[str, Any]:
    """What every new connection adds to `conninfo`: its timeouts and, with IAM auth, a
    fresh token as the password (called once per connection)."""
    kwargs: dict[str, Any] = {
        "connect_timeout": settings.db_connect_timeout_seconds,
        "options": (
            f"-c statement_timeout={settings.db_statement_timeout_ms} "
            f"-c lock_timeout={settings.db_lock_timeout_ms}"
        ),
    }
    if settings.db_application_name:
        kwargs["application_name"] = settings.db_application_name
    if settings.db_iam_user and not settings.database_url:
        kwargs["password"] = (token_factory or iam_auth_token)(settings)
    return kwargs


# A connection back in the pool for less than this is reused without a round trip (unless its
# socket shows the server closed it). Well under the shortest time an Aurora failover leaves
# the cluster without a writer, so a connection it broke is always older than this by the
# time a new writer could have served the request (docs/decisions.md, 2026-11-24).
CHECK_IDLE_SECONDS = 2.0


class RecentUseCheck:
    """The pool's check before it hands out a connection: `SELECT`-free when the connection
    was returned (or opened) less than `idle_seconds` ago by `clock` (wall time: a frozen
    Lambda environment's sleep counts as idle, and a clock stepped back checks) and nothing
    has arrived on its socket; otherwise psycopg_pool's round trip, whose failure makes the
    pool discard the connection and take another."""

    def __init__(
        self, idle_seconds: float = CHECK_IDLE_SECONDS, clock: Callable[[], float] = time.time
    ):
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._settled_at: WeakKeyDictionary[psycopg.Connection[Any], float] = WeakKeyDictionary()

    def settled(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection (the pool's `configure`) or one given back to the pool."""
        self._settled_at[conn] = self._clock()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        from psycopg_pool import ConnectionPool

        settled_at = self._settled_at.get(conn)
        idle = None if settled_at is None else self._clock() - settled_at
        if idle is None or not 0 <= idle < self.idle_seconds or _closed_by_server(conn):
            ConnectionPool.check_connection(conn)


def _closed_by_server(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection's socket has anything to read: the server's goodbye (a
    terminated backend's FATAL message, its end-of-file or reset). An idle connection of ours
    is sent nothing else (no LISTEN), so anything there means: check it."""
    from psycopg.pq import ConnStatus

    if conn.closed or conn.broken or conn.pgconn.status != ConnStatus.OK:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def open_pool(
    settings: DatabaseSettings,
    token_factory: TokenFactory | None = None,
    check: RecentUseCheck | None = None,
) -> ConnectionPool:
    from psycopg_pool import ConnectionPool

    recent_use = check or RecentUseCheck()

    class Pool(ConnectionPool):
        def putconn(self, conn: psycopg.Connection[Any]) -> None:
            # Not the pool's `reset` hook: with one, the pool returns connections on its
            # worker thread, which a Lambda environment may freeze before it runs.
            recent_use.settled(conn)
            super().putconn(conn)

    return Pool(
        conninfo(settings),
        min_size=1,
        max_size=settings.db_pool_max_size,
        kwargs=lambda: connect_kwargs(settings, token_factory),
        timeout=settings.db_pool_timeout_seconds,
        configure=recent_use.settled,
        check=recent_use.check,
        open=True,
        name="gpudev",
    )


def connection_pool() -> ConnectionPool:
    global _pool
    with _lock:
        if _pool is None:
            _pool = open_pool(database_settings())
        return _pool


@contextmanager
def _limits_as_domain_errors() -> Iterator[None]:
    from gpudev.db.constraints import transient_errors

    settings = database_settings()
    with transient_errors(
        settings.db_statement_timeout_ms,
        settings.db_lock_timeout_ms,
        settings.db_pool_timeout_seconds,
    ):
        yield


@contextmanager
def connection() -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection; the block runs in one transaction, committed on success."""
    with _limits_as_domain_errors(), connection_pool().connection() as conn:
        yield conn


@contextmanager
def autocommit_connection() -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection where each statement commits by itself and `conn.transaction()`
    is a real transaction: for work that must commit before it signals someone else (the
    lifecycle's tasks, the allocator, the jobs consumer)."""
    with _limits_as_domain_errors(), connection_pool().connection() as conn:
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
