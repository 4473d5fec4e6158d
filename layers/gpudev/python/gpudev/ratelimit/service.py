"""Taking one request from the caller's bucket (one round trip, on the request's own
autocommit connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpudev.db.queries import query
from gpudev.identity import Caller
from gpudev.ratelimit.rules import RequestRate, refusal

if TYPE_CHECKING:
    import psycopg


def take_request(conn: psycopg.Connection[Any], caller: Caller, rate: RequestRate) -> None:
    """One token from the caller's bucket, or `RateLimited` with nothing written."""
    row = conn.execute(
        query("ratelimit/take"),
        {"principal_arn": caller.principal_arn, "burst": rate.burst, "per_second": rate.per_second},
    ).fetchone()
    # No row: another request made the bucket after this statement's snapshot; it took
    # that one token from a full bucket, so this one is within the burst.
    if row is not None and row[0] > 0:
        raise refusal(rate, row[0])
