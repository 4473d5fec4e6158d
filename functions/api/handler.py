"""The REST API behind API Gateway (AWS_IAM auth on every route but /health).

Routes parse and answer; rules live in the layer. Domain errors become HTTP statuses here,
and only here.
"""

from __future__ import annotations

from typing import Annotated, Any

import psycopg
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from gpudev.aws import aws_clients
from gpudev.callers import bound_user, caller_for_request
from gpudev.capacity import ClusterStatus, TypeAvailability, availability_by_type, cluster_status
from gpudev.db.pool import autocommit_connection, connection
from gpudev.disks.requests import (
    DiskRequest,
    RenameRequest,
    caller_disks,
    create_disk,
    delete_disk,
    find_disk,
    rename_disk,
)
from gpudev.disks.views import DiskView
from gpudev.errors import (
    Conflict,
    Gone,
    GpuDevError,
    InvalidRequest,
    LimitReached,
    NotFound,
    Unavailable,
)
from gpudev.identity import Caller, NotAuthorized
from gpudev.jobs import JobQueue
from gpudev.models import ReservationStatus
from gpudev.observability import logger, tracer
from gpudev.reservations.service import (
    ReservationRequest,
    add_user,
    caller_reservations,
    find_reservation,
    request_cancel,
    request_extension,
    set_jupyter,
    submit_reservation,
)
from gpudev.reservations.views import ReservationView
from gpudev.settings import api_settings

app = APIGatewayRestResolver(enable_validation=True)
API_TITLE = "gpu-dev API"
API_VERSION = "1"

_STATUS = {
    NotAuthorized: 403,
    NotFound: 404,
    Conflict: 409,
    Gone: 410,
    InvalidRequest: 422,
    LimitReached: 429,
    Unavailable: 503,
}


@app.exception_handler(GpuDevError)
def _domain_error(error: GpuDevError) -> Response[Any]:
    status = next((code for kind, code in _STATUS.items() if isinstance(error, kind)), 500)
    return Response(status, content_types.APPLICATION_JSON, {"message": error.message})


@app.exception_handler(psycopg.OperationalError)
def _database_unreachable(error: psycopg.OperationalError) -> Response[Any]:
    """A connection lost or refused mid-request (Aurora restarting or failing over): the
    request's transaction did not commit. 503, so clients retry (a reserve with the same
    client request id is safe to repeat), instead of a 500 that reads as a bug."""
    logger.warning("database unreachable", extra={"error": type(error).__name__})
    return Response(
        503,
        content_types.APPLICATION_JSON,
        {
            "message": "the database did not answer; try again "
            "(a reserve with its client request id is safe to repeat)"
        },
    )


def current_caller() -> Caller:
    identity = app.current_event.request_context.identity
    return caller_for_request(identity.user_arn, identity.principal_org_id, api_settings())


class Health(BaseModel):
    status: str


class Me(BaseModel):
    username: str
    principal_arn: str
    account_id: str
    github_username: str | None


@app.get("/health")
def health() -> Health:
    return Health(status="ok")


@app.get("/v1/me")
def me() -> Me:
    caller = current_caller()
    with connection() as conn:
        user = bound_user(conn, caller)
    return Me(
        username=user.username,
        principal_arn=user.principal_arn,
        account_id=caller.account_id,
        github_username=user.github_username,
    )


class ReservationList(BaseModel):
    reservations: list[ReservationView]
    limit: int
    offset: int


def jobs() -> JobQueue:
    return JobQueue(aws_clients().sqs, api_settings().jobs_queue_url)


class ErrorMessage(BaseModel):
    message: str


@app.post(
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
        429: {
            "description": "a per-user limit is reached (live reservations, or GPUs held or "
            "queued); the message states the limit and the usage; nothing was saved",
            "content": {"application/json": {"model": ErrorMessage}},
        },
    },
)
def create_reservation(request: ReservationRequest) -> Response[ReservationView]:
    caller = current_caller()
    queue = jobs()
    with autocommit_connection() as conn:  # the services commit, then send
        reservation, created = submit_reservation(conn, queue, caller, request)
    return Response(
        202 if created else 200,
        content_types.APPLICATION_JSON,
        ReservationView.of(reservation),
    )


@app.get("/v1/reservations")
def list_reservations(
    status: Annotated[list[ReservationStatus] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ReservationList:
    caller = current_caller()
    with connection() as conn:
        rows = caller_reservations(conn, caller, status, limit, offset)
    return ReservationList(
        reservations=[ReservationView.of(r) for r in rows], limit=limit, offset=offset
    )


@app.get("/v1/reservations/<reservation_id>")
def get_reservation(reservation_id: str) -> ReservationView:
    caller = current_caller()
    with connection() as conn:
        return ReservationView.of(find_reservation(conn, caller, reservation_id))


@app.post("/v1/reservations/<reservation_id>/cancel")
def cancel_reservation(reservation_id: str) -> Response[ReservationView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _accepted(request_cancel(conn, jobs(), caller, reservation_id))


def _accepted(reservation: Any) -> Response[ReservationView]:
    return Response(202, content_types.APPLICATION_JSON, ReservationView.of(reservation))


class ExtendRequest(BaseModel):
    hours: float = Field(description="1 to 24; the total since launch stays within 48")


class AddUserRequest(BaseModel):
    github_username: str = Field(min_length=1, max_length=39)


@app.post("/v1/reservations/<reservation_id>/extend")
def extend_reservation(reservation_id: str, request: ExtendRequest) -> Response[ReservationView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _accepted(request_extension(conn, jobs(), caller, reservation_id, request.hours))


@app.post("/v1/reservations/<reservation_id>/users")
def add_reservation_user(reservation_id: str, request: AddUserRequest) -> Response[ReservationView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _accepted(add_user(conn, jobs(), caller, reservation_id, request.github_username))


@app.put("/v1/reservations/<reservation_id>/jupyter")
def enable_jupyter(reservation_id: str) -> Response[ReservationView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _accepted(set_jupyter(conn, jobs(), caller, reservation_id, enabled=True))


@app.delete("/v1/reservations/<reservation_id>/jupyter")
def disable_jupyter(reservation_id: str) -> Response[ReservationView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _accepted(set_jupyter(conn, jobs(), caller, reservation_id, enabled=False))


class DiskList(BaseModel):
    disks: list[DiskView]


def _disk_accepted(disk: Any) -> Response[DiskView]:
    return Response(202, content_types.APPLICATION_JSON, DiskView.of(disk))


@app.post("/v1/disks")
def create_user_disk(request: DiskRequest) -> Response[DiskView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _disk_accepted(create_disk(conn, jobs(), caller, request))


@app.get("/v1/disks")
def list_disks() -> DiskList:
    caller = current_caller()
    with connection() as conn:
        rows = caller_disks(conn, caller)
    return DiskList(disks=[DiskView.of(d) for d in rows])


@app.get("/v1/disks/<disk_name>")
def get_disk(disk_name: str) -> DiskView:
    caller = current_caller()
    with connection() as conn:
        return DiskView.of(find_disk(conn, caller, disk_name))


@app.delete("/v1/disks/<disk_name>")
def delete_user_disk(disk_name: str) -> Response[DiskView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _disk_accepted(delete_disk(conn, jobs(), caller, disk_name))


@app.post("/v1/disks/<disk_name>/rename")
def rename_user_disk(disk_name: str, request: RenameRequest) -> Response[DiskView]:
    caller = current_caller()
    with autocommit_connection() as conn:  # the services commit, then send
        return _disk_accepted(rename_disk(conn, jobs(), caller, disk_name, request))


class Availability(BaseModel):
    gpu_types: list[TypeAvailability]


@app.get("/v1/gpu/availability")
def gpu_availability() -> Availability:
    caller = current_caller()
    with connection() as conn:
        bound_user(conn, caller)
        return Availability(gpu_types=availability_by_type(conn))


@app.get("/v1/cluster/status")
def get_cluster_status() -> ClusterStatus:
    caller = current_caller()
    with connection() as conn:
        bound_user(conn, caller)
        return cluster_status(conn)


# Responses carry Jupyter URLs with their tokens: never recorded as trace metadata (every
# function also has POWERTOOLS_TRACER_CAPTURE_RESPONSE=false; this holds without it).
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
