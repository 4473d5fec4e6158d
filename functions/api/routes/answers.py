"""What each route answers, as its decorator declares it for the OpenAPI document: the
success status with its model, and every error status it can answer, each with the one
error shape (`ErrorMessage`, routes/errors.py).

A route names its own errors (404 for what it looks up, 409, 410, 422 for a rule of its
service); what every route of a kind can answer is added here once:
- a route for a checked caller: 403 (API Gateway refused the signature, or the caller's
  account or role is refused), 409 (their first request, racing another), 429 (request
  rate), 503 (database lost mid-request) — `Caller.ALL`;
- a route that takes a body: 400 (not UTF-8), 413 (over the 10 MB payload quota), 415 (not
  JSON), 422 (fails validation) — `body=True`;
- a route with parameters: 422 (a parameter outside its pattern or bounds).
tests/unit/test_openapi.py checks the declarations against each route's code."""

from __future__ import annotations

from enum import Enum
from typing import Any

from routes.errors import ErrorMessage

MEANINGS: dict[int, str] = {
    400: "the body is not UTF-8 text: nothing was read or written",
    403: "API Gateway refused the request's signature, or the caller's account or role is "
    "not allowed this: nothing was read or written",
    404: "no such resource among the caller's: nothing was changed",
    405: "the path does not take this method (`Allow` lists those it takes)",
    409: "the resource's state does not allow this now, or the caller's first request raced "
    "another: nothing was changed; look again and retry",
    410: "the disk is deleted: nothing was changed",
    413: "the body is over API Gateway's 10 MB payload quota: nothing was read",
    415: "the body is not JSON (application/json): nothing was read or written",
    422: "a parameter or the body fails validation, or a rule of the request: nothing was "
    "written; `field` and `allowed` say what to change",
    429: "the caller's request rate is over its share (docs/architecture.md, Limits), or a "
    "per-user limit is reached: nothing was written; retry after Retry-After seconds",
    503: "the database did not answer: nothing was committed; retry (a reserve with its "
    "client request id is safe to repeat)",
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds until the caller's next request is accepted",
        "schema": {"type": "integer", "minimum": 1},
    }
}


class Caller(Enum):
    """What a route asks of its caller before its service runs (routes/caller.py)."""

    NONE = ()  # public: /health
    CHECKED = (403,)  # checked, but no database work: no rate limit
    ALL = (403, 409, 429, 503)  # checked, then a read or change through the database


BODY_ERRORS = (400, 413, 415, 422)


def answers(
    status: int,
    model: type[Any],
    description: str,
    *errors: int,
    caller: Caller = Caller.ALL,
    body: bool = False,
    also: dict[int, tuple[type[Any], str]] | None = None,
    meanings: dict[int, str] | None = None,
) -> dict[int, Any]:
    """A route's `responses`: `status` with `model`, `also` (other successes), and `errors`
    plus those of its kind (module docstring), each with a meaning from `meanings` or
    MEANINGS."""
    declared: dict[int, Any] = {
        status: {"description": description, "content": {"application/json": {"model": model}}}
    }
    for other, (other_model, other_description) in (also or {}).items():
        declared[other] = {
            "description": other_description,
            "content": {"application/json": {"model": other_model}},
        }
    codes = set(errors) | set(caller.value) | (set(BODY_ERRORS) if body else set())
    for code in sorted(codes):
        declared[code] = {
            "description": (meanings or {}).get(code, MEANINGS[code]),
            "content": {"application/json": {"model": ErrorMessage}},
        }
        if code == 429:
            declared[code]["headers"] = RETRY_AFTER
    return declared
