"""Errors become HTTP statuses and bodies here, and only here. Every 4xx/5xx the API
answers has one shape, `ErrorMessage`: a sentence (`message`) and, where they apply, the
request field at fault, what it allows, the limit reached and a hint. Domain errors map by
kind; a body, path or query that fails validation is 422 with sentences (validation.py)
instead of powertools' `{"statusCode", "detail"}`; a body that is not UTF-8 is 400 and one
of another media type than JSON 415 (routes/resolver.py); an unknown route is 404 and a known
path asked with a method it lacks 405; a database lost mid-request is 503. (API Gateway's own
refusals, 403 for a bad signature and 413 for a body over 10 MB, are `{"message"}` too.)"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from pydantic import BaseModel

from gpudev.errors import (
    Conflict,
    Gone,
    GpuDevError,
    InvalidRequest,
    LimitReached,
    MalformedInput,
    NotFound,
    RateLimited,
    Unavailable,
    shown,
)
from gpudev.identity import NotAuthorized
from gpudev.observability import logger
from routes.resolver import JSON_MEDIA_TYPE, UndecodableBody
from routes.validation import summary

STATUS_BY_ERROR: dict[type[GpuDevError], int] = {
    MalformedInput: 400,
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
    """The body of every 4xx/5xx answer; absent keys do not apply."""

    message: str
    field: str | None = None  # the request field at fault, e.g. "hours"
    allowed: str | None = None  # what that field allows, e.g. "5 minutes (0.0833 h) to 24 hours"
    limit: int | None = None  # the per-user limit reached
    hint: str | None = None  # what to do next


def _message(
    status: int, message: str, headers: dict[str, str] | None = None, **details: Any
) -> Response[Any]:
    body = ErrorMessage(message=message, **details)
    return Response(
        status,
        content_types.APPLICATION_JSON,
        body.model_dump(mode="json", exclude_none=True),
        headers=headers,
    )


def domain_error(error: GpuDevError) -> Response[Any]:
    status = next((code for kind, code in STATUS_BY_ERROR.items() if isinstance(error, kind)), 500)
    # RFC 9110: a 429 or a 503 may say when to come back; the CLI waits that long.
    retry_after = (
        error.retry_after_seconds if isinstance(error, RateLimited | Unavailable) else None
    )
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    return _message(
        status,
        error.message,
        headers,
        field=error.field,
        allowed=error.allowed,
        limit=error.limit,
        hint=error.hint,
    )


def invalid_request(error: RequestValidationError) -> Response[Any]:
    problem = summary(error.errors())
    return _message(422, problem.message, field=problem.field, allowed=problem.allowed)


def undecodable_body(error: UndecodableBody) -> Response[Any]:
    return _message(400, f"{error}; send JSON in UTF-8", field="body", allowed=JSON_MEDIA_TYPE)


def unsupported_media_type(error: RequestUnsupportedContentType) -> Response[Any]:
    """`error`'s message is the media type sent (routes/resolver.py)."""
    return _message(
        415,
        f"the request body must be JSON ({JSON_MEDIA_TYPE}); got {shown(str(error))}",
        field="Content-Type",
        allowed=JSON_MEDIA_TYPE,
    )


def database_unreachable(error: DatabaseUnreachable) -> Response[Any]:
    """A connection lost or refused mid-request (Aurora restarting or failing over): the
    request's transaction did not commit. 503, so clients retry (a reserve with the same
    client request id is safe to repeat), instead of a 500 that reads as a bug."""
    logger.warning("database unreachable", extra={"error": type(error.__cause__).__name__})
    return _message(503, DATABASE_UNREACHABLE)


def _route_methods(app: APIGatewayRestResolver, path: str) -> list[str]:
    """The methods the API's routes take at `path`."""
    routes = app._static_routes + app._dynamic_routes
    return sorted({route.method for route in routes if route.rule.match(path)})


def unknown_route(app: APIGatewayRestResolver) -> Response[Any]:
    event = app.current_event
    method, path = event.http_method, event.path
    methods = _route_methods(app, path)
    if methods:
        return _message(
            405,
            f"{shown(path)} does not take {method}; it takes {', '.join(methods)}",
            headers={"Allow": ", ".join(methods)},
            allowed=", ".join(methods),
        )
    return _message(
        404,
        f"no such route: {method} {shown(path)}",
        hint="the routes are in docs/openapi.json; is the CLI older than the API?",
    )


def map_errors(app: APIGatewayRestResolver) -> None:
    app.exception_handler(GpuDevError)(domain_error)
    app.exception_handler(RequestValidationError)(invalid_request)
    app.exception_handler(UndecodableBody)(undecodable_body)
    app.exception_handler(RequestUnsupportedContentType)(unsupported_media_type)
    app.exception_handler(DatabaseUnreachable)(database_unreachable)

    @app.not_found
    def _not_found(error: NotFoundError) -> Response[Any]:
        return unknown_route(app)
