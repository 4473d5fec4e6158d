"""Turns errors raised by PostgreSQL into domain errors: constraint violations by name, and
the connection limits (statement and lock timeouts, a starved pool) into transient ones."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from gpudev.errors import DatabaseBusy, DatabaseUnavailable, constraint_error


@contextmanager
def domain_errors() -> Iterator[None]:
    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise constraint_error(exc.diag.constraint_name, exc.diag.message_primary) from exc


def _seconds(milliseconds: int) -> str:
    return f"{milliseconds / 1000:g} s"


@contextmanager
def transient_errors(
    statement_timeout_ms: int, lock_timeout_ms: int, pool_timeout_seconds: float
) -> Iterator[None]:
    """Timeouts of the database become DatabaseBusy / DatabaseUnavailable (503 in the API,
    retried by the state machine), with a message that says which limit was reached."""
    from psycopg_pool import PoolTimeout

    try:
        yield
    except PoolTimeout as exc:
        raise DatabaseUnavailable(
            f"the database is unavailable: no connection within {pool_timeout_seconds:g} s; "
            "nothing was changed, try again shortly"
        ) from exc
    except psycopg.errors.LockNotAvailable as exc:
        raise DatabaseBusy(
            f"the database is busy: waited longer than {_seconds(lock_timeout_ms)} for a "
            "lock (lock_timeout); it was rolled back, try again shortly"
        ) from exc
    except psycopg.errors.QueryCanceled as exc:
        raise DatabaseBusy(
            "the database is busy: a statement ran longer than "
            f"{_seconds(statement_timeout_ms)} (statement_timeout); it was rolled back, "
            "try again shortly"
        ) from exc
