"""Requests of a shape the OpenAPI document does not allow are refused by the API function
with a 4xx in the one error shape, before any service runs (routes/resolver.py, params.py,
errors.py): the classes schemathesis found answered with 502s or by the wrong route."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from localcloud.gateway import proxy_event
from tools.openapi import API_DIR

ERROR_KEYS = {"message", "field", "allowed", "limit", "hint"}
CONTEXT = SimpleNamespace(
    function_name="api",
    memory_limit_in_mb=256,
    invoked_function_arn="arn:aws:lambda:us-east-2:123456789012:function:api",
    aws_request_id="test",
)


def _answer(method: str, raw_path: str, body: bytes = b"", **headers: str) -> tuple[int, Any]:
    if str(API_DIR) not in sys.path:
        sys.path.insert(0, str(API_DIR))
    import handler

    event = proxy_event(method, raw_path, headers, body, None, "127.0.0.1")
    response = handler.app.resolve(event, CONTEXT)
    return response["statusCode"], response


def _error(response: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(response["body"])
    assert set(body) <= ERROR_KEYS and body["message"], body
    return body


def test_a_body_that_is_not_utf8_is_400():
    status, response = _answer(
        "POST", "/v1/disks", b'{"disk_name": "\xff\xfe"}', **{"Content-Type": "application/json"}
    )
    assert status == 400
    assert _error(response)["message"] == "the request body is not UTF-8 text; send JSON in UTF-8"


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "text/plain",
        "application/jsonx",
    ],
)
def test_a_body_that_is_not_json_is_415(content_type):
    status, response = _answer(
        "POST", "/v1/disks", b"disk_name=scratch", **{"Content-Type": content_type}
    )
    assert status == 415
    body = _error(response)
    assert body["field"] == "Content-Type" and body["allowed"] == "application/json"
    assert body["message"].startswith("the request body must be JSON (application/json); got")


def test_json_with_a_charset_is_json():
    status, response = _answer(
        "POST", "/v1/disks", b"{}", **{"Content-Type": "application/json; charset=utf-8"}
    )
    assert status == 422 and _error(response)["field"] == "disk_name"


@pytest.mark.parametrize(
    ("method", "raw_path"),
    [
        ("GET", "/v1/reservations/%0A"),
        ("POST", "/v1/disks/%0A"),
        ("GET", "/health%0A"),
        ("GET", "/health%00"),
        ("GET", "/v1/me%0A"),
        ("GET", "/v1/disks/a%00b"),  # no route's parameter takes a control character
    ],
)
def test_paths_are_matched_exactly(method, raw_path):
    status, response = _answer(method, raw_path, b"{}")
    assert status == 404 and _error(response)["message"].startswith("no such route")


def test_a_trailing_slash_still_reaches_its_route():
    assert _answer("GET", "/health/")[0] == 200


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS"])
def test_head_and_options_are_methods_the_path_lacks(method):
    status, response = _answer(method, "/v1/disks")
    assert status == 405 and response["multiValueHeaders"]["Allow"] == ["GET, POST"]
    assert _error(response)["allowed"] == "GET, POST"


@pytest.mark.parametrize(
    ("raw_path", "field"),
    [
        ("/v1/reservations?offset=9223372036854775808", "offset"),
        ("/v1/reservations?limit=501", "limit"),
        ("/v1/disks/a!b", "disk_name"),
        ("/v1/disks/my%20disk/content", "disk_name"),
        ("/v1/usage?until=0.5", "until"),
        ("/v1/usage?since=1e3", "since"),
    ],
)
def test_parameters_outside_their_pattern_or_bounds_are_422(raw_path, field):
    status, response = _answer("GET", raw_path)
    assert status == 422 and _error(response)["field"] == field
