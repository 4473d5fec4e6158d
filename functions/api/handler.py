"""The REST API behind API Gateway (AWS_IAM auth on every route but /health).

Routes parse and answer; rules live in the layer. Domain errors become HTTP statuses here,
and only here.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from gpudev.db.pool import connection
from gpudev.errors import Conflict, GpuDevError, InvalidRequest, NotFound
from gpudev.identity import Caller, NotAuthorized, caller_from_arn, require_allowed_role
from gpudev.observability import logger, tracer
from gpudev.repositories import UsersRepository
from gpudev.settings import api_settings

app = APIGatewayRestResolver(enable_validation=True)

_STATUS = {NotAuthorized: 403, NotFound: 404, Conflict: 409, InvalidRequest: 422}


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


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
