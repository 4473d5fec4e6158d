"""Usage reports: one round trip to the database (repositories/usage.py), then the totals
for the requested grouping, computed here from the finest rows (user, type, UTC day)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.errors import InvalidRequest
from gpudev.identity import Caller
from gpudev.repositories import UsageRepository
from gpudev.repositories.usage import UsageRows
from gpudev.usage.schemas import UsageGrouping, UsageReport, UsageTotal
from gpudev.usage_rows import GpuHours
from gpudev.utilisation.views import used_gpu_hours

DEFAULT_WINDOW = timedelta(days=7)
MAX_WINDOW = timedelta(days=366)
EVERYONE = "everyone"

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def window(
    since: datetime | None, until: datetime | None, now: datetime
) -> tuple[datetime, datetime]:
    """[since, until) in UTC: until defaults to now, since to a week before until; a time
    without a zone is UTC."""
    end = _utc(until) if until else now
    start = _utc(since) if since else end - DEFAULT_WINDOW
    if start >= end:
        raise InvalidRequest(
            f"since ({start.isoformat()}) must be before until ({end.isoformat()})"
        )
    if end - start > MAX_WINDOW:
        raise InvalidRequest(f"a report covers at most {MAX_WINDOW.days} days; got {end - start}")
    return start, end


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def totals(rows: list[GpuHours], by: UsageGrouping) -> list[UsageTotal]:
    """GPU-hours summed by user, type or day, largest first (days in order)."""
    sums: dict[str, float] = defaultdict(float)
    for row in rows:
        key = {"user": row.username, "type": row.gpu_type, "day": row.day.isoformat()}[by]
        sums[key] += row.gpu_hours
    ordered = sorted(sums.items()) if by == "day" else sorted(sums.items(), key=lambda i: -i[1])
    return [UsageTotal(key=key, gpu_hours=round(hours, 4)) for key, hours in ordered]


def report_of(
    rows: UsageRows,
    since: datetime,
    until: datetime,
    as_of: datetime,
    scope: str,
    by: UsageGrouping,
) -> UsageReport:
    return UsageReport(
        since=since,
        until=until,
        as_of=as_of,
        scope=scope,
        by=by,
        totals=totals(rows.gpu_hours, by),
        gpu_hours=rows.gpu_hours,
        queue_waits=rows.queue_waits,
        outcomes=rows.outcomes,
        utilisation=rows.utilisation,
        gpu_hours_used=used_gpu_hours(rows.gpu_seconds_used),
    )


def usage_report(
    conn: psycopg.Connection[Any],
    caller: Caller,
    since: datetime | None,
    until: datetime | None,
    by: UsageGrouping,
    *,
    everyone: bool = False,
    clock: Clock = _utc_now,
) -> UsageReport:
    """The caller's own usage (two round trips: the bound user, the report); with
    `everyone`, everyone's usage and the fleet's utilisation, for operators (one round trip:
    the operator route has checked the caller)."""
    username = None if everyone else bound_user(conn, caller).username
    now = clock()
    start, end = window(since, until, now)
    rows = UsageRepository(conn).report(start, end, now, username)
    return report_of(rows, start, end, now, username or EVERYONE, by)
