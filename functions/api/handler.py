"""The REST API behind API Gateway (AWS_IAM auth on every route but /health).

Routes parse and answer; rules live in the layer. Domain errors become HTTP statuses here,
and only here.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from gpudev.aws import aws_clients
from gpudev.capacity import ClusterStatus, TypeAvailability, availability_by_type, cluster_status
from gpudev.db.pool import connection
from gpudev.errors import Conflict, GpuDevError, InvalidRequest, NotFound, Unavailable
from gpudev.identity import Caller, NotAuthorized, caller_from_arn, require_allowed_role
from gpudev.jobs import JobQueue
from gpudev.models import ReservationStatus
from gpudev.observability import logger, tracer
from gpudev.repositories import ReservationsRepository, UsersRepository
from gpudev.reservations.service import (
    ReservationRequest,
    find_reservation,
    request_cancel,
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
    InvalidRequest: 422,
    Unavailable: 503,
}


@app.exception_handler(GpuDevError)
def _domain_error(error: GpuDevError) -> Response[Any]:
    status = next((code for kind, code in _STATUS.items() if isinstance(error, kind)), 500)
    return Response(status, content_types.APPLICATION_JSON, {"message": error.message})


def current_caller() -> Caller:
    caller = caller_from_arn(app.current_event.request_context.identity.user_arn or "")
    require_allowed_role(caller, api_settings().allowed_role_names)
    return caller


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
        user = UsersRepository(conn).upsert_principal(caller.username, caller.principal_arn)
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


@app.post("/v1/reservations")
def create_reservation(request: ReservationRequest) -> Response[ReservationView]:
    caller = current_caller()
    queue = jobs()
    with connection() as conn:
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
        rows = ReservationsRepository(conn).list_for_user(caller.username, status, limit, offset)
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
    with connection() as conn:
        reservation = request_cancel(conn, jobs(), caller, reservation_id)
    return Response(202, content_types.APPLICATION_JSON, ReservationView.of(reservation))


class Availability(BaseModel):
    gpu_types: list[TypeAvailability]


@app.get("/v1/gpu/availability")
def gpu_availability() -> Availability:
    current_caller()
    with connection() as conn:
        return Availability(gpu_types=availability_by_type(conn))


@app.get("/v1/cluster/status")
def get_cluster_status() -> ClusterStatus:
    current_caller()
    with connection() as conn:
        return cluster_status(conn)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
