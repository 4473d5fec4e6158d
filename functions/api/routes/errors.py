"""Errors become HTTP statuses here, and only here: domain errors by kind, a database lost
mid-request as 503. A body or parameter that fails validation keeps powertools' own 422
(`{"statusCode": 422, "detail": [{"loc", "type"}]}`)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from pydantic import BaseModel

from gpudev.errors import (
    Conflict,
    Gone,
    GpuDevError,
    InvalidRequest,
    LimitReached,
    NotFound,
    Unavailable,
)
from gpudev.identity import NotAuthorized
from gpudev.observability import logger

STATUS_BY_ERROR: dict[type[GpuDevError], int] = {
    NotAuthorized: 403,
    NotFound: 404,
    Conflict: 409,
    Gone: 410,
    InvalidRequest: 422,
    LimitReached: 429,
    Unavailable: 503,
}
DATABASE_UNREACHABLE = (
    "the database did not answer; try again (a reserve with its client request id is safe to "
    "repeat)"
)


class DatabaseUnreachable(Exception):
    """A psycopg.OperationalError that left a request's database work (routes/caller.py
    raises this from it): psycopg is imported by the first request that uses the database,
    not by the handler's import, so its class cannot be registered here."""


class ErrorMessage(BaseModel):
    message: str


def _message(status: int, message: str) -> Response[Any]:
    return Response(status, content_types.APPLICATION_JSON, {"message": message})


def domain_error(error: GpuDevError) -> Response[Any]:
    status = next((code for kind, code in STATUS_BY_ERROR.items() if isinstance(error, kind)), 500)
    return _message(status, error.message)


def database_unreachable(error: DatabaseUnreachable) -> Response[Any]:
    """A connection lost or refused mid-request (Aurora restarting or failing over): the
    request's transaction did not commit. 503, so clients retry (a reserve with the same
    client request id is safe to repeat), instead of a 500 that reads as a bug."""
    logger.warning("database unreachable", extra={"error": type(error.__cause__).__name__})
    return _message(503, DATABASE_UNREACHABLE)


def map_errors(app: APIGatewayRestResolver) -> None:
    app.exception_handler(GpuDevError)(domain_error)
    app.exception_handler(DatabaseUnreachable)(database_unreachable)
