"""AWS throttling a service, for outage tests: moto's server answers a throttled service's
requests with the error AWS itself sends when a caller exceeds its request rate.

The service is read from the request's SigV4 credential scope (`…/<region>/<service>/
aws4_request`), as AWS routes it. Each protocol has its own error shape, which botocore
parses into the error code our retry rules see: `ThrottlingException` (JSON services and
REST ones), `Throttling` (the query services), `RequestLimitExceeded` (EC2).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/(?P<service>[^/]+)/aws4_request")

# signing name -> (HTTP status, headers, body) as AWS sends it when throttling
_JSON_THROTTLE = (
    400,
    [("Content-Type", "application/x-amz-json-1.0")],
    b'{"__type":"ThrottlingException","message":"Rate exceeded"}',
)
_QUERY_THROTTLE = (
    400,
    [("Content-Type", "text/xml")],
    b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
    b"<Message>Rate exceeded</Message></Error><RequestId>local</RequestId></ErrorResponse>",
)
_REST_THROTTLE = (
    429,
    [("Content-Type", "application/json"), ("x-amzn-ErrorType", "ThrottlingException")],
    b'{"message":"Rate exceeded"}',
)
THROTTLES: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {
    "states": _JSON_THROTTLE,
    "events": _JSON_THROTTLE,
    "logs": _JSON_THROTTLE,
    "scheduler": _REST_THROTTLE,
    "lambda": (
        429,
        [("Content-Type", "application/json"), ("x-amzn-ErrorType", "TooManyRequestsException")],
        b'{"Type":"User","message":"Rate exceeded"}',
    ),
    "eks": _REST_THROTTLE,
    "sts": _QUERY_THROTTLE,
    "iam": _QUERY_THROTTLE,
    "autoscaling": _QUERY_THROTTLE,
    "ec2": (
        503,
        [("Content-Type", "text/xml")],
        b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
        b"<Message>Request limit exceeded.</Message></Error></Errors>"
        b"<RequestID>local</RequestID></Response>",
    ),
}
# The names people know the services by, to their SigV4 signing names.
ALIASES = {"stepfunctions": "states", "cloudwatch-logs": "logs"}


def signing_name(service: str) -> str:
    """The signing name of `service`; ValueError naming the choices for one we can't throttle."""
    name = ALIASES.get(service, service)
    if name not in THROTTLES:
        raise ValueError(
            f"cannot throttle {service!r} (SQS runs in its own process); one of "
            + ", ".join(sorted({*THROTTLES, *ALIASES}))
        )
    return name


class AwsThrottles:
    """Which services are throttled, until when; wraps moto's WSGI app."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}  # signing name -> time.monotonic()

    def throttle(self, service: str, seconds: float) -> None:
        name = signing_name(service)
        with self._lock:
            self._until[name] = time.monotonic() + seconds

    def clear(self) -> None:
        with self._lock:
            self._until.clear()

    def active(self) -> dict[str, float]:
        """Seconds left per throttled service."""
        now = time.monotonic()
        with self._lock:
            return {name: until - now for name, until in self._until.items() if until > now}

    def _throttled(self, authorization: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        match = _SCOPE.search(authorization)
        if not match:
            return None
        name = match["service"]
        with self._lock:
            until = self._until.get(name, 0.0)
        return THROTTLES[name] if until > time.monotonic() else None

    def wrap(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
        def throttled_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            answer = self._throttled(environ.get("HTTP_AUTHORIZATION", ""))
            if answer is None:
                return app(environ, start_response)
            status, headers, body = answer
            reason = "Too Many Requests" if status == 429 else "Throttled"
            start_response(f"{status} {reason}", [*headers, ("Content-Length", str(len(body)))])
            return [body]

        return throttled_app
