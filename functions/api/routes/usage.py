"""Usage: the caller's own GPU-hours, queue waits and outcomes (UTC)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from gpudev.usage.schemas import UsageGrouping, UsageReport
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import IsoDateTime

router = Router()

Since = Annotated[
    IsoDateTime | None,
    Query(description="start (ISO 8601, UTC when no zone); a week before until"),
]
Until = Annotated[IsoDateTime | None, Query(description="end, exclusive (ISO 8601); now")]
By = Annotated[UsageGrouping, Query(description="what the totals are grouped by")]


@router.get(
    "/v1/usage", responses=answers(200, UsageReport, "the caller's usage in the window", 422)
)
def my_usage(
    caller: ForCaller, since: Since = None, until: Until = None, by: By = "day"
) -> UsageReport:
    from gpudev.usage.service import usage_report  # here: the API's import needs no psycopg

    return caller.read(usage_report, since, until, by)
