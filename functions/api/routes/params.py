"""The path and query parameters the routes share, with the patterns and bounds the OpenAPI
document states and request validation enforces (422 in the one error shape): a parameter
outside them never reaches a service (a NUL in a disk name once reached PostgreSQL)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import BeforeValidator

from gpudev.models import ReservationStatus
from gpudev.reservations.rules import (
    DISK_NAME,
    GITHUB_USERNAME_MAX,
    GITHUB_USERNAME_SHAPE,
    RESERVATION_ID_SHAPE,
)

# PostgreSQL's bigint ends at 2**63 - 1; no caller has anywhere near this many reservations.
MAX_OFFSET = 1_000_000_000

# The id's pattern is checked by the service (`reservation_id_or_prefix`), which says what
# an id is and where to find one: stated in the schema only.
ReservationId = Annotated[
    str,
    Path(
        json_schema_extra={"pattern": RESERVATION_ID_SHAPE},
        description="a reservation's id, or its first 8 or more characters",
    ),
]
DiskName = Annotated[str, Path(pattern=DISK_NAME.pattern, description="a disk's name")]
GithubUsername = Annotated[
    str,
    Path(
        pattern=GITHUB_USERNAME_SHAPE,
        max_length=GITHUB_USERNAME_MAX,
        description="a GitHub username added to the reservation",
    ),
]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="reservations to skip")]
Limit = Annotated[int, Query(ge=1, le=500, description="reservations to return, at most")]
EventOffset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="entries to skip")]
EventLimit = Annotated[int, Query(ge=1, le=500, description="entries to return, at most")]
Statuses = Annotated[
    list[ReservationStatus] | None, Query(description="only reservations in these statuses")
]


NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
ISO_8601 = "an ISO 8601 date and time, e.g. 2026-11-01T00:00:00Z"


def _not_a_number(value: Any) -> Any:
    """pydantic also reads a number as seconds since 1970 (`until=0.5`); the document says
    `date-time`, so only ISO 8601 text is a moment here."""
    if isinstance(value, str) and NUMBER.fullmatch(value):
        raise ValueError(ISO_8601)
    return value


IsoDateTime = Annotated[datetime, BeforeValidator(_not_a_number)]
