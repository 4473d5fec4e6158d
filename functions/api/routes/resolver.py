"""The API's resolver: powertools' REST resolver, held to the OpenAPI document.

Two things powertools does more loosely than the document says, made exact here:

- A route matches the whole path. powertools ends its route patterns with `$`, which also
  matches before a trailing newline, so `/v1/reservations/%0A` reached the list route and
  `POST /v1/disks/%0A` created a disk. `\\Z` ends at the end of the path only; a path no
  route matches is 404 (routes/errors.py). powertools' leniency for trailing slashes stays.
- A body is JSON, UTF-8, or nothing. powertools also parses form and multipart bodies (a
  multipart type without a boundary raised ValueError, a 502), and decoding a body that is
  not UTF-8 raised UnicodeDecodeError (another 502). Any other media type is refused as
  `RequestUnsupportedContentType` (415) and undecodable bytes as `UndecodableBody` (400),
  both before the body is read for validation; routes/errors.py gives them the one error
  shape. Routes without a body never read one, as before.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType

JSON_MEDIA_TYPE = "application/json"
EXACT_ROUTE = r"^{}/*\Z"  # powertools': "^{}/*$"


class UndecodableBody(Exception):
    """The request's body is not UTF-8 (or its base64 encoding is broken)."""


def media_type(content_type: str) -> str:
    """`application/json; charset=utf-8` -> `application/json`."""
    return content_type.split(";", 1)[0].strip().lower()


def body_bytes(body: str | None, is_base64_encoded: bool) -> bytes:
    if not body:
        return b""
    if not is_base64_encoded:
        return body.encode()
    try:
        return base64.b64decode(body, validate=True)
    except binascii.Error as error:
        raise UndecodableBody("the request body's base64 encoding is broken") from error


class JsonBodyValidation(OpenAPIRequestValidationMiddleware):
    """powertools' request validation, for JSON bodies only."""

    def _get_body(self, app: Any) -> dict[str, Any]:
        event = app.current_event
        content_type = media_type(event.headers.get("content-type") or "")
        if content_type not in ("", JSON_MEDIA_TYPE):
            raise RequestUnsupportedContentType(
                content_type,
                errors=[{"type": "unsupported_content_type", "loc": ("body",), "input": {}}],
            )
        try:
            body_bytes(event.body, event.is_base64_encoded).decode("utf-8")
        except UnicodeDecodeError as error:
            raise UndecodableBody("the request body is not UTF-8 text") from error
        return super()._get_body(app)


class ContractResolver(APIGatewayRestResolver):
    def __init__(self) -> None:
        super().__init__(enable_validation=True)
        # powertools puts this middleware first in every route's stack (before ours would).
        self._request_validation_middleware = JsonBodyValidation()  # type: ignore[no-untyped-call]

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = EXACT_ROUTE) -> Any:
        return ApiGatewayResolver._compile_regex(rule, EXACT_ROUTE)
