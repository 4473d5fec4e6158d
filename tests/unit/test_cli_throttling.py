"""The CLI waits out a 429 and sends the request again: as long as `Retry-After` says (the
API's per-principal rate, docs/security.md "Limits"), or 1, 2, 4 s for API Gateway's own
throttling; at most three times, saying so; never for a request whose repetition could
apply it twice (a POST without a client request id), never for a per-user limit (no
Retry-After), never for a wait past a minute. Against a real local HTTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import botocore.session
import pytest

from gpudev_cli.client import CliError, SigV4Client, TryAgainLater
from localcloud.http import LocalHttpServer, RawRequest, Reply

RATE_LIMITED = json.dumps(
    {"message": "too many requests: the limit is 120 a minute per caller, 40 at once; retry in 2 s"}
).encode()


class Throttling:
    """Answers 429 (with `headers`) `times` times, then 200; records every request."""

    def __init__(
        self, times: int, headers: dict[str, str], body: bytes = RATE_LIMITED, status: int = 429
    ) -> None:
        self.times, self.headers, self.body, self.status = times, headers, body, status
        self.seen: list[tuple[str, str, bytes]] = []

    def __call__(self, request: RawRequest) -> Reply:
        self.seen.append((request.method, request.raw_path, request.body))
        if len(self.seen) <= self.times:
            return self.status, {"Content-Type": "application/json", **self.headers}, self.body
        return 200, {"Content-Type": "application/json"}, b'{"ok": true}'


class Client:
    """A client of a throttling server, with its waits and lines recorded instead of slept
    and printed."""

    def __init__(self, server: LocalHttpServer) -> None:
        self.waits: list[float] = []
        self.said: list[str] = []
        session = botocore.session.Session()
        session.set_credentials("AKIDEXAMPLE", "secret")
        self.client = SigV4Client(
            server.url,
            session,
            "us-east-2",
            timeout_seconds=5,
            sleep=self.waits.append,
            say=self.said.append,
        )


@pytest.fixture
def serve() -> Iterator[object]:
    servers: list[LocalHttpServer] = []

    def start(handler: Throttling) -> Client:
        server = LocalHttpServer(handler, "test")
        server.start()
        servers.append(server)
        return Client(server)

    yield start
    for server in servers:
        server.stop()


def test_a_get_waits_retry_after_and_is_sent_again_until_it_succeeds(serve):
    server = Throttling(2, {"Retry-After": "2"})
    client = serve(server)
    assert client.client.request("GET", "/v1/reservations") == {"ok": True}
    assert client.waits == [2.0, 2.0]
    assert len(server.seen) == 3
    assert client.said == [
        "the gpu-dev API asks to slow down: waiting 2 s, then trying again (1/3)",
        "the gpu-dev API asks to slow down: waiting 2 s, then trying again (2/3)",
    ]


def test_retries_are_bounded_and_the_last_429_is_the_error(serve):
    server = Throttling(10, {"Retry-After": "1"})
    client = serve(server)
    with pytest.raises(CliError, match=r"too many requests: the limit is 120 .*\(HTTP 429\)"):
        client.client.request("GET", "/v1/disks")
    assert len(server.seen) == 4 and client.waits == [1.0, 1.0, 1.0]


def test_a_reserve_with_its_client_request_id_is_retried_with_the_same_body(serve):
    server = Throttling(1, {"Retry-After": "3"})
    client = serve(server)
    body = {"gpu_type": "t4", "client_request_id": "abc123"}
    assert client.client.request("POST", "/v1/reservations", body) == {"ok": True}
    assert client.waits == [3.0]
    assert [json.loads(sent) for _, _, sent in server.seen] == [body, body]


def test_a_post_without_an_idempotency_key_is_not_retried(serve):
    server = Throttling(1, {"Retry-After": "1"})
    client = serve(server)
    with pytest.raises(CliError, match=r"retry in 2 s \(HTTP 429\)"):
        client.client.request("POST", "/v1/reservations/abcdef12/extend", {"hours": 1})
    assert len(server.seen) == 1 and client.waits == [] and client.said == []


def test_a_per_user_limit_has_no_retry_after_and_is_not_waited_for(serve):
    limit = json.dumps({"message": "you have 4 live reservations, the limit is 4", "limit": 4})
    server = Throttling(1, {}, limit.encode())
    client = serve(server)
    with pytest.raises(CliError, match="the limit is 4"):
        client.client.request("GET", "/v1/reservations")
    assert len(server.seen) == 1 and client.waits == []


def test_a_retry_after_past_a_minute_is_reported_not_waited(serve):
    server = Throttling(1, {"Retry-After": "600"})
    client = serve(server)
    with pytest.raises(CliError, match="HTTP 429"):
        client.client.request("GET", "/v1/me")
    assert client.waits == [] and len(server.seen) == 1


def test_api_gateways_own_throttling_backs_off_one_two_four_seconds(serve):
    server = Throttling(3, {}, b'{"message": "Too Many Requests"}')
    client = serve(server)
    assert client.client.request("DELETE", "/v1/reservations/abcdef12/jupyter") == {"ok": True}
    assert client.waits == [1.0, 2.0, 4.0]


BUSY = json.dumps({"message": "CloudWatch Logs is busy and did not answer; try again"}).encode()


def test_a_503_with_retry_after_is_waited_out_like_a_429(serve):
    server = Throttling(1, {"Retry-After": "2"}, BUSY, status=503)
    client = serve(server)
    assert client.client.request("GET", "/v1/reservations/abcdef12/logs") == {"ok": True}
    assert client.waits == [2.0] and len(server.seen) == 2


def test_a_503_still_throttled_after_the_retries_is_try_again_later(serve):
    server = Throttling(10, {"Retry-After": "1"}, BUSY, status=503)
    client = serve(server)
    with pytest.raises(TryAgainLater, match=r"CloudWatch Logs is busy.*\(HTTP 503\)"):
        client.client.request("GET", "/v1/reservations/abcdef12/logs")
    assert client.waits == [1.0, 1.0, 1.0]


def test_a_503_without_retry_after_is_not_waited_for(serve):
    lost = json.dumps({"message": "the database did not answer; try again"}).encode()
    server = Throttling(1, {}, lost, status=503)
    client = serve(server)
    with pytest.raises(CliError) as failed:
        client.client.request("GET", "/v1/reservations")
    assert not isinstance(failed.value, TryAgainLater)
    assert client.waits == [] and len(server.seen) == 1
