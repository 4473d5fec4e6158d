"""A Lambda execution environment runs one invocation at a time; the local cloud must not
run two requests through one handler module at once, or request-scoped state (powertools'
current event, the logger's keys, a batch processor's records) leaks between callers — a
race production never has. Found as a reservation submitted by alice owned by bob.

Environments running at once must not share it either: powertools keeps the current event
on its resolver's base class, once per interpreter; tests/unit/test_local_lambda_environments.py
pauses one request mid-way to show it deterministically (this stress test caught it only
under CPU starvation)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support.api import ApiClient


def test_concurrent_requests_of_two_principals_each_act_as_their_own_caller(api: ApiClient):
    profiles = ["alice", "bob"] * 40

    def who(profile: str) -> tuple[str, str]:
        reply = api.call("GET", "/v1/me", profile=profile)
        assert reply.status == 200, reply.body
        return profile, reply.body["username"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(who, profiles))
    assert [(asked, got) for asked, got in answers if asked != got] == []
