"""A reservation's pod output, read from CloudWatch Logs (gpudev/logs/): one page at a time,
oldest first, for the reservation's owner.

The service is imported when the route runs (the database driver and the CloudWatch client
are not paid for by the handler's import: bench/cold_start.py)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from gpudev.logs.query import NEXT_ALLOWED, SINCE_ALLOWED
from gpudev.logs.schemas import LogPage
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import ReservationId

router = Router()
MAX_NODES = 64  # far above any reservation's nodes; the service checks the reservation's own

LogNode = Annotated[
    int | None,
    Query(
        ge=0,
        lt=MAX_NODES,
        description="only this node's pod (0 is the first); all nodes if absent",
    ),
]
LogSince = Annotated[
    str | None, Query(min_length=1, max_length=40, description=f"from: {SINCE_ALLOWED}")
]
LOGS_UNAVAILABLE = (
    "the database did not answer, or CloudWatch Logs throttled the read (then with "
    "Retry-After: ask again after that many seconds): nothing was changed"
)
LogLimit = Annotated[int, Query(ge=1, le=500, description="lines to return, at most")]
LogNext = Annotated[
    str | None,
    Query(alias="next", min_length=1, max_length=4096, description=f"continue: {NEXT_ALLOWED}"),
]


@router.get(
    "/v1/reservations/<reservation_id>/logs",
    responses=answers(
        200,
        LogPage,
        "one page of what the reservation's pods printed, oldest first",
        404,
        409,
        422,
        meanings={
            404: "no such reservation among the caller's (another user's is not found either): "
            "nothing was read",
            409: "the id prefix matches more than one of the caller's reservations",
            422: "a parameter is outside its bounds: `since` neither a duration nor an ISO "
            "time, in the future, or more than 366 days ago; `node` not a node of the "
            "reservation; `next` not the token of a page of this query; `field` and `allowed` "
            "say what to change",
            503: LOGS_UNAVAILABLE,
        },
    ),
)
def read_reservation_logs(
    reservation_id: ReservationId,
    caller: ForCaller,
    node: LogNode = None,
    since: LogSince = None,
    limit: LogLimit = 100,
    next_page: LogNext = None,
) -> LogPage:
    from gpudev.logs.service import reservation_logs

    return caller.read(
        reservation_logs,
        reservation_id,
        pod_log_reader(),
        node=node,
        since=since,
        limit=limit,
        next_token=next_page,
    )


def pod_log_reader() -> Any:
    """The dev pods' log group's reader (gpudev/logs/cloudwatch.py), for both routes."""
    from gpudev.aws import aws_clients
    from gpudev.logs.cloudwatch import PodLogReader
    from gpudev.settings import pod_log_settings

    return PodLogReader(aws_clients().logs, pod_log_settings().pod_log_group)
