"""One connection pool per execution environment, opened at first use.

Sized for Lambda (one request at a time per environment): a couple of connections,
reused across warm invocations and checked before reuse so an Aurora failover or an idle
timeout costs one reconnect, not a failed request.

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
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

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
    if settings.db_iam_user and not settings.database_url:
        kwargs["password"] = (token_factory or iam_auth_token)(settings)
    return kwargs


def open_pool(
    settings: DatabaseSettings, token_factory: TokenFactory | None = None
) -> ConnectionPool:
    from psycopg_pool import ConnectionPool

    return ConnectionPool(
        conninfo(settings),
        min_size=1,
        max_size=settings.db_pool_max_size,
        kwargs=lambda: connect_kwargs(settings, token_factory),
        timeout=settings.db_pool_timeout_seconds,
        check=ConnectionPool.check_connection,
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
