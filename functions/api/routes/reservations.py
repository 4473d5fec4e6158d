"""Reservations: submit, read, and change a live one (cancel, extend, add or remove a user,
Jupyter).
Changes are recorded with their job in the outbox and sent after commit: 202.

Each route imports its service when it runs: the services import the database driver and
the repositories, which the handler's import does not pay for (bench/cold_start.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.models import Reservation
from gpudev.reservations.schemas import (
    AddUserRequest,
    EventList,
    ExtendRequest,
    ReservationList,
    ReservationRequest,
    ReservationView,
)
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import (
    EventLimit,
    EventOffset,
    GithubUsername,
    Limit,
    Offset,
    ReservationId,
    Statuses,
)

router = Router()
# A route on one reservation: not found (404), an id prefix that matches more than one, or a
# state that does not allow the change (409), an id or a change a rule refuses (422).
ONE_RESERVATION = (404, 409, 422)


def _view(status: int, reservation: Reservation) -> Response[ReservationView]:
    return Response(status, content_types.APPLICATION_JSON, ReservationView.of(reservation))


@router.post(
    "/v1/reservations",
    responses=answers(
        202,
        ReservationView,
        "recorded pending and queued",
        409,
        422,
        body=True,
        also={
            200: (
                ReservationView,
                "a repeated client_request_id: the first reservation, unchanged",
            )
        },
        meanings={
            400: "the body is not UTF-8 text, or `image` is not an image reference (the "
            "message names the part at fault): nothing was written",
            403: "profiling asked for by a caller outside gpudev:profilingRoles (or any "
            "refused caller); nothing was saved",
            409: "the disk asked for is in use by another reservation, or the caller's first "
            "request raced another; nothing was saved",
            422: "the body fails validation, or a rule of the request (a GPU count its type "
            "does not take, a disk the caller does not have, a type without nodes, an image "
            "the operators do not allow or the registry does not have): nothing was saved",
            429: "a per-user limit is reached (live reservations, or GPUs held or queued; "
            "the message states the limit and the usage), or the caller's request rate "
            "(with Retry-After); nothing was saved",
        },
    ),
)
def create_reservation(request: ReservationRequest, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import submit_reservation

    if request.profiling:
        caller.require_profiling()
    reservation, created = caller.change(submit_reservation, request)
    return _view(202 if created else 200, reservation)


@router.get(
    "/v1/reservations", responses=answers(200, ReservationList, "the caller's reservations", 422)
)
def list_reservations(
    caller: ForCaller,
    status: Statuses = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> ReservationList:
    from gpudev.reservations.service import caller_reservations

    return ReservationList.of(
        caller.read(caller_reservations, status, limit, offset), limit, offset
    )


@router.get(
    "/v1/reservations/<reservation_id>",
    responses=answers(200, ReservationView, "the reservation", *ONE_RESERVATION),
)
def get_reservation(reservation_id: ReservationId, caller: ForCaller) -> ReservationView:
    from gpudev.reservations.service import find_reservation

    return ReservationView.of(caller.read(find_reservation, reservation_id))


@router.get(
    "/v1/reservations/<reservation_id>/events",
    responses=answers(
        200,
        EventList,
        "one page of the reservation's timeline, oldest first",
        *ONE_RESERVATION,
    ),
)
def list_reservation_events(
    reservation_id: ReservationId,
    caller: ForCaller,
    limit: EventLimit = 100,
    offset: EventOffset = 0,
) -> EventList:
    from gpudev.reservations.service import reservation_timeline

    events = caller.read(reservation_timeline, reservation_id, limit, offset)
    return EventList.of(events, limit, offset)


@router.post(
    "/v1/reservations/<reservation_id>/cancel",
    responses=answers(
        202,
        ReservationView,
        "recorded: the reservation is cancelled and its pod stopped",
        *ONE_RESERVATION,
    ),
)
def cancel_reservation(
    reservation_id: ReservationId, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import request_cancel

    return _view(202, caller.change(request_cancel, reservation_id))


@router.post(
    "/v1/reservations/<reservation_id>/extend",
    responses=answers(
        202,
        ReservationView,
        "recorded: the reservation's hours are extended",
        *ONE_RESERVATION,
        body=True,
    ),
)
def extend_reservation(
    reservation_id: ReservationId, request: ExtendRequest, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import request_extension

    return _view(202, caller.change(request_extension, reservation_id, request.hours))


@router.post(
    "/v1/reservations/<reservation_id>/users",
    responses=answers(
        202,
        ReservationView,
        "recorded: the pod adds the user's account and keys",
        *ONE_RESERVATION,
        body=True,
    ),
)
def add_reservation_user(
    reservation_id: ReservationId, request: AddUserRequest, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import add_user

    return _view(202, caller.change(add_user, reservation_id, request.github_username))


@router.delete(
    "/v1/reservations/<reservation_id>/users/<github_username>",
    responses=answers(
        202,
        ReservationView,
        "recorded: the pod removes the user's account, keys and sessions",
        *ONE_RESERVATION,
        meanings={
            404: "no such reservation, or the GitHub user is not one of its added users; "
            "nothing was changed"
        },
    ),
)
def remove_reservation_user(
    reservation_id: ReservationId, github_username: GithubUsername, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import remove_user

    return _view(202, caller.change(remove_user, reservation_id, github_username))


@router.put(
    "/v1/reservations/<reservation_id>/jupyter",
    responses=answers(202, ReservationView, "recorded: the pod starts Jupyter", *ONE_RESERVATION),
)
def enable_jupyter(reservation_id: ReservationId, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import set_jupyter

    return _view(202, caller.change(set_jupyter, reservation_id, enabled=True))


@router.delete(
    "/v1/reservations/<reservation_id>/jupyter",
    responses=answers(202, ReservationView, "recorded: the pod stops Jupyter", *ONE_RESERVATION),
)
def disable_jupyter(reservation_id: ReservationId, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import set_jupyter

    return _view(202, caller.change(set_jupyter, reservation_id, enabled=False))
