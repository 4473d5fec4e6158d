"""Each principal's request bucket (api_request_buckets, migration 0028; gpudev/ratelimit/)."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.db.queries import query


class RequestBucketsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def take(self, principal_arn: str, burst: int, per_second: float) -> float:
        """One token in one statement: 0 when taken, else the seconds until one is there."""
        row = self._conn.execute(
            query("ratelimit/take"),
            {"principal_arn": principal_arn, "burst": burst, "per_second": per_second},
        ).fetchone()
        assert row is not None  # the statement always returns the caller's row
        return float(row[0])
