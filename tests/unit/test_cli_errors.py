"""API errors become one line in the CLI: a per-user limit is the API's own message, API
Gateway's throttling gets a retry hint."""

from __future__ import annotations

from gpudev_cli.client import Reply, describe_failure


def _reply(status: int, body: dict[str, str]) -> Reply:
    return Reply(status, {"Content-Type": "application/json"}, body)


def test_a_per_user_limit_is_printed_as_the_api_states_it():
    message = (
        "you have 4 live reservations, the limit is 4; "
        "cancel one with `gpu-dev cancel` or wait for one to end"
    )
    assert describe_failure(_reply(429, {"message": message})) == f"{message} (HTTP 429)"


def test_gateway_throttling_suggests_retrying():
    described = describe_failure(_reply(429, {"message": "Too Many Requests"}))
    assert described == "the gpu-dev API is busy (HTTP 429, throttled): retry in a few seconds"
