"""Each principal's share of the API through the SigV4 gateway: a burst from one principal
is answered 429 with `Retry-After` and the limit in the one error shape, nothing written,
while another principal's requests still succeed; the CLI waits it out and retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpudev.settings import reset_settings_cache
from gpudev_cli.client import SigV4Client
from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations, drain_jobs, reserve


@pytest.fixture
def request_rate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set the API's request rate for one test (the shared cloud's is out of the way; the
    API runs in this process, so the environment reaches it)."""

    def set_rate(per_minute: int, burst: int) -> None:
        monkeypatch.setenv("API_REQUESTS_PER_MINUTE", str(per_minute))
        monkeypatch.setenv("API_REQUEST_BURST", str(burst))
        reset_settings_cache()

    yield set_rate
    monkeypatch.undo()
    reset_settings_cache()


def test_a_burst_from_one_principal_is_429_while_another_principal_gets_through(
    api, local_cloud: LocalCloud, request_rate
):
    request_rate(per_minute=2, burst=3)  # a token every 30 s
    answers = [api.call("GET", "/v1/reservations", profile="alice") for _ in range(3)]
    assert [reply.status for reply in answers] == [200, 200, 200]
    drain_jobs(local_cloud)
    before = count_reservations(local_cloud)
    refused = reserve(api, profile="alice")
    assert refused.status == 429, refused.body
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 30
    assert refused.body == {
        "message": "too many requests: the limit is 2 a minute per caller, 3 at once; "
        f"retry in {retry_after} s",
        "limit": 2,
        "hint": "wait for Retry-After; the gpu-dev CLI waits and retries by itself",
    }
    assert count_reservations(local_cloud) == before and drain_jobs(local_cloud) == []
    assert api.call("GET", "/v1/me", profile="alice").status == 429
    # bob is another principal: his bucket is full
    assert [api.call("GET", "/v1/me", profile="bob").status for _ in range(3)] == [200] * 3
    assert api.call("GET", "/health", profile=None).status == 200  # public: never limited


def test_the_cli_waits_for_retry_after_and_gets_through(api, request_rate):
    request_rate(per_minute=60, burst=1)  # a token a second
    said: list[str] = []
    alice = api.as_profile("alice")
    cli = SigV4Client(alice.api_url, alice.session, alice.region, say=said.append)
    assert api.call("GET", "/v1/me", profile="alice").status in (200, 429)
    assert cli.request("GET", "/v1/me")["username"] == "alice"
    assert said and said[0].startswith("the gpu-dev API asks to slow down: waiting 1 s")
    cli.close()
