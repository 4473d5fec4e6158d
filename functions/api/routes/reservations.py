"""Reservations: submit, read, and change a live one (cancel, extend, add or remove a user,
Jupyter).
Changes are recorded with their job in the outbox and sent after commit: 202.

Each route imports its service when it runs: the services import the database driver and
the repositories, which the handler's import does not pay for (bench/cold_start.py)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from gpudev.models import Reservation, ReservationStatus
from gpudev.reservations.schemas import (
    AddUserRequest,
    ExtendRequest,
    ReservationList,
    ReservationRequest,
    ReservationView,
)
from routes.caller import ForCaller
from routes.errors import ErrorMessage

router = Router()


def _view(status: int, reservation: Reservation) -> Response[ReservationView]:
    return Response(status, content_types.APPLICATION_JSON, ReservationView.of(reservation))


@router.post(
    "/v1/reservations",
    responses={
        202: {
            "description": "recorded pending and queued",
            "content": {"application/json": {"model": ReservationView}},
        },
        200: {
            "description": "a repeated client_request_id: the first reservation, unchanged",
            "content": {"application/json": {"model": ReservationView}},
        },
        403: {
            "description": "profiling asked for by a caller outside gpudev:profilingRoles "
            "(or any refused caller); nothing was saved",
            "content": {"application/json": {"model": ErrorMessage}},
        },
        429: {
            "description": "a per-user limit is reached (live reservations, or GPUs held or "
            "queued; the message states the limit and the usage), or the caller's request "
            "rate (with Retry-After); nothing was saved",
            "content": {"application/json": {"model": ErrorMessage}},
        },
    },
)
def create_reservation(request: ReservationRequest, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import submit_reservation

    if request.profiling:
        caller.require_profiling()
    reservation, created = caller.change(submit_reservation, request)
    return _view(202 if created else 200, reservation)


@router.get("/v1/reservations")
def list_reservations(
    caller: ForCaller,
    status: Annotated[list[ReservationStatus] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ReservationList:
    from gpudev.reservations.service import caller_reservations

    return ReservationList.of(
        caller.read(caller_reservations, status, limit, offset), limit, offset
    )


@router.get("/v1/reservations/<reservation_id>")
def get_reservation(reservation_id: str, caller: ForCaller) -> ReservationView:
    from gpudev.reservations.service import find_reservation

    return ReservationView.of(caller.read(find_reservation, reservation_id))


@router.post("/v1/reservations/<reservation_id>/cancel")
def cancel_reservation(reservation_id: str, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import request_cancel

    return _view(202, caller.change(request_cancel, reservation_id))


@router.post("/v1/reservations/<reservation_id>/extend")
def extend_reservation(
    reservation_id: str, request: ExtendRequest, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import request_extension

    return _view(202, caller.change(request_extension, reservation_id, request.hours))


@router.post("/v1/reservations/<reservation_id>/users")
def add_reservation_user(
    reservation_id: str, request: AddUserRequest, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import add_user

    return _view(202, caller.change(add_user, reservation_id, request.github_username))


@router.delete(
    "/v1/reservations/<reservation_id>/users/<github_username>",
    responses={
        202: {
            "description": "recorded: the pod removes the user's account, keys and sessions",
            "content": {"application/json": {"model": ReservationView}},
        },
        404: {
            "description": "no such reservation, or the GitHub user is not one of its added "
            "users; nothing was changed",
            "content": {"application/json": {"model": ErrorMessage}},
        },
    },
)
def remove_reservation_user(
    reservation_id: str, github_username: str, caller: ForCaller
) -> Response[ReservationView]:
    from gpudev.reservations.service import remove_user

    return _view(202, caller.change(remove_user, reservation_id, github_username))


@router.put("/v1/reservations/<reservation_id>/jupyter")
def enable_jupyter(reservation_id: str, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import set_jupyter

    return _view(202, caller.change(set_jupyter, reservation_id, enabled=True))


@router.delete("/v1/reservations/<reservation_id>/jupyter")
def disable_jupyter(reservation_id: str, caller: ForCaller) -> Response[ReservationView]:
    from gpudev.reservations.service import set_jupyter

    return _view(202, caller.change(set_jupyter, reservation_id, enabled=False))
