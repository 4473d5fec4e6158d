"""Operator routes (/v1/admin): sessions of the ADMIN_ROLES only, checked on the principal
before anything is read (`routes/caller.py` `ForOperator`): everyone's usage, every live
reservation (never its Jupyter token: `operator_view`), any reservation's timeline and pod
logs (the owner's routes' services with the operators' finder), a force-cancel whose reason the
status history records, the jobs' dead-letter queue. Services are imported by their route
(the API's import needs no psycopg or AWS client: bench/cold_start.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.logs.schemas import LogPage
from gpudev.reservations.schemas import EventList, ReservationView, operator_view
from gpudev.settings import api_settings
from gpudev.usage.dead_letters import DeadLetters, peek_dead_letters
from gpudev.usage.schemas import ForceCancelRequest, LiveReservations, UsageReport
from routes.answers import Caller, answers
from routes.caller import ForOperator
from routes.logs import LOGS_UNAVAILABLE, LogLimit, LogNext, LogNode, LogSince, pod_log_reader
from routes.params import EventLimit, EventOffset, ReservationId
from routes.usage import By, Since, Until

router = Router()


@router.get(
    "/v1/admin/usage", responses=answers(200, UsageReport, "everyone's usage in the window", 422)
)
def everyones_usage(
    caller: ForOperator, since: Since = None, until: Until = None, by: By = "user"
) -> UsageReport:
    from gpudev.usage.service import usage_report

    return caller.read(usage_report, since, until, by, everyone=True)


@router.get(
    "/v1/admin/reservations",
    responses=answers(200, LiveReservations, "every live reservation (no Jupyter tokens)"),
)
def every_live_reservation(caller: ForOperator) -> LiveReservations:
    from gpudev.usage.operators import live_reservations

    reservations = caller.read(live_reservations)
    return LiveReservations(reservations=[operator_view(r) for r in reservations])


@router.get(
    "/v1/admin/reservations/<reservation_id>/events",
    responses=answers(
        200,
        EventList,
        "one page of the reservation's timeline, oldest first (anyone's reservation)",
        404,
        409,
        422,
    ),
)
def any_reservation_events(
    reservation_id: ReservationId,
    caller: ForOperator,
    limit: EventLimit = 100,
    offset: EventOffset = 0,
) -> EventList:
    # The owner's route's service, with the operators' finder: one query, one answer shape.
    from gpudev.reservations.service import reservation_timeline
    from gpudev.usage.operators import find_any_reservation

    events = caller.read(reservation_timeline, reservation_id, limit, offset, find_any_reservation)
    return EventList.of(events, limit, offset)


@router.get(
    "/v1/admin/reservations/<reservation_id>/logs",
    responses=answers(
        200,
        LogPage,
        "one page of what the reservation's pods printed, oldest first (anyone's reservation)",
        404,
        409,
        422,
        meanings={503: LOGS_UNAVAILABLE},
    ),
)
def any_reservation_logs(
    reservation_id: ReservationId,
    caller: ForOperator,
    node: LogNode = None,
    since: LogSince = None,
    limit: LogLimit = 100,
    next_page: LogNext = None,
) -> LogPage:
    # The owner's route's service, with the operators' finder (as the timeline above).
    from gpudev.logs.service import reservation_logs
    from gpudev.usage.operators import find_any_reservation

    return caller.read(
        reservation_logs,
        reservation_id,
        pod_log_reader(),
        node=node,
        since=since,
        limit=limit,
        next_token=next_page,
        find=find_any_reservation,
    )


@router.post(
    "/v1/admin/reservations/<reservation_id>/cancel",
    responses=answers(
        202,
        ReservationView,
        "recorded: the reservation is cancelled with the reason in its history",
        404,
        409,
        422,
        body=True,
    ),
)
def force_cancel_reservation(
    reservation_id: ReservationId, request: ForceCancelRequest, caller: ForOperator
) -> Response[ReservationView]:
    from gpudev.usage.operators import force_cancel

    cancelled = caller.change(force_cancel, reservation_id, request.reason)
    return Response(202, content_types.APPLICATION_JSON, operator_view(cancelled))


@router.get(
    "/v1/admin/dlq",
    responses=answers(
        200, DeadLetters, "the jobs the dead-letter queue holds", caller=Caller.CHECKED
    ),
)
def dead_letters(caller: ForOperator) -> DeadLetters:
    from gpudev.aws import aws_clients

    return peek_dead_letters(aws_clients().sqs, api_settings().jobs_dlq_url)
