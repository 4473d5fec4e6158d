"""Taking one request from the caller's bucket (one round trip, on the request's own
autocommit connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpudev.identity import Caller
from gpudev.ratelimit.rules import RequestRate, refusal

if TYPE_CHECKING:
    import psycopg


def take_request(conn: psycopg.Connection[Any], caller: Caller, rate: RequestRate) -> None:
    """One token from the caller's bucket, or `RateLimited` with nothing written."""
    # Here, not at the top: the API's routes import this module, and the repositories
    # import psycopg, which a handler's import should not pay for (bench/cold_start.py).
    from gpudev.repositories.request_buckets import RequestBucketsRepository

    wait = RequestBucketsRepository(conn).take(caller.principal_arn, rate.burst, rate.per_second)
    if wait > 0:
        raise refusal(rate, wait)
