"""API errors become one line in the CLI: a per-user limit is the API's own message, API
Gateway's throttling gets a retry hint."""

from __future__ import annotations

from gpudev_cli.client import Reply
from gpudev_cli.failures import describe_failure


def _reply(status: int, body: dict[str, str] | dict[str, object]) -> Reply:
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


def test_the_sentence_and_its_hint_are_one_line():
    body = {
        "message": "'e85' is not a reservation id: give the id",
        "field": "reservation_id",
        "hint": "`gpu-dev list` shows your reservations' ids",
    }
    assert describe_failure(_reply(422, body)) == (
        "'e85' is not a reservation id: give the id (HTTP 422); "
        "hint: `gpu-dev list` shows your reservations' ids"
    )


def test_a_body_without_a_message_falls_back_to_the_status():
    assert describe_failure(_reply(413, {})) == "Request Entity Too Large (HTTP 413)"


def test_a_403_refusing_a_request_field_is_the_apis_sentence_not_a_credentials_hint():
    body = {
        "message": "profiling gives the pod CAP_SYS_ADMIN, root on its node, so only sessions "
        "of the roles in gpudev:profilingRoles (Perf) may ask for it; you called as x",
        "field": "profiling",
        "hint": "reserve without --profiling",
    }
    assert describe_failure(_reply(403, body)) == (
        f"{body['message']} (HTTP 403); hint: reserve without --profiling"
    )
    refused = describe_failure(_reply(403, {"message": "gpu-dev accepts sessions of the roles X"}))
    assert refused.startswith("access denied (") and "AWS credentials" in refused
