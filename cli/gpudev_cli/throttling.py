"""Waiting out a throttled request (HTTP 429): how long, and whether at all. The API's
per-principal rate says `Retry-After` (docs/security.md "Limits"); API Gateway's own
stage throttling says nothing, and gets 1, 2, 4 s; a per-user limit (no Retry-After) is not
helped by waiting. A 503 with `Retry-After` is a dependency the API reads throttling it
(CloudWatch Logs for `gpu-dev logs`) and is waited out the same way; a 503 without one (the
database lost) is not. `SigV4Client.request` waits at most THROTTLE_RETRIES times."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudev_cli.client import Reply

# API Gateway's own 429 body when the stage throttles; our limits say which limit instead.
GATEWAY_THROTTLED = "Too Many Requests"
# 429s waited out per request, and the longest wait taken: a longer Retry-After is reported.
THROTTLE_RETRIES = 3
LONGEST_WAIT_SECONDS = 60.0


def say_on_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def throttled_wait(reply: Reply, attempt: int) -> float | None:
    """How long to wait before sending a throttled request again, or None: not a 429, or a
    429 that waiting does not help (a per-user limit, which carries no Retry-After), or a
    wait longer than LONGEST_WAIT_SECONDS. API Gateway's own throttling says no Retry-After:
    1, 2, 4 s."""
    if reply.status not in (429, 503):
        return None
    retry_after = next(
        (value for name, value in reply.headers.items() if name.lower() == "retry-after"), None
    )
    if retry_after is None and reply.status == 503:
        return None
    if retry_after is None:
        message = reply.body.get("message") if isinstance(reply.body, dict) else reply.body
        return float(2 ** (attempt - 1)) if message in (None, "", GATEWAY_THROTTLED) else None
    try:
        seconds = float(retry_after)  # the API sends seconds, never an HTTP date
    except ValueError:
        return None
    return seconds if 0 <= seconds <= LONGEST_WAIT_SECONDS else None
