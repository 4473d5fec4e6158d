"""Times as the API server writes them in objects (RFC 3339, whole seconds, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def now() -> str:
    return format_time(datetime.now(UTC))


def parse_time(value: str) -> datetime:
    return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    return moment.strftime(TIME_FORMAT)
