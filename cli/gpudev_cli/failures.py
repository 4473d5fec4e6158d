"""One line for a failed answer of the API (`SigV4Client.request`, `lookup`)."""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING

from gpudev_cli.throttling import GATEWAY_THROTTLED

if TYPE_CHECKING:
    from gpudev_cli.client import Reply


def describe_failure(reply: Reply) -> str:
    """One line for a failed answer: the API's sentence (every error body is `{"message"}`,
    with a `hint` where one helps), and the status."""
    payload = reply.body if isinstance(reply.body, dict) else {}
    message = payload.get("message") or ""
    if reply.status == 403 and not payload.get("field"):
        # (a 403 naming a request field refuses that field, e.g. profiling: said as is)
        return (
            f"access denied ({message or 'forbidden'}): check that your AWS credentials "
            "are for the gpu-dev account and role"
        )
    if reply.status == 429 and message in ("", GATEWAY_THROTTLED):
        return "the gpu-dev API is busy (HTTP 429, throttled): retry in a few seconds"
    line = f"{message or _reason(reply)} (HTTP {reply.status})"
    if payload.get("hint"):
        line += f"; hint: {payload['hint']}"
    return line


def _reason(reply: Reply) -> str:
    try:
        return HTTPStatus(reply.status).phrase
    except ValueError:
        return "error"
