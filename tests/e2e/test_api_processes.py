"""The API function in execution environments of its own (`--api-processes`): each an OS
process, as Lambda runs them, serving one signed request at a time behind the real gateway.

A second gateway on this package's cloud hands requests to two such processes (they get the
cloud's environment, as `LocalCloud` gives them); `python -m localcloud --api-processes`
itself is started in tests/e2e/test_local_cloud_restart.py, which checks that Ctrl+C leaves
none behind."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from localcloud.aws import signing_key
from localcloud.deadline import Deadline
from localcloud.gateway import LocalApiGateway
from localcloud.lambdas import Invocation
from localcloud.processes import ProcessEnvironments
from localcloud.stack import REGION, LocalCloud
from tests.support.api import ApiClient
from tests.support.child_processes import (
    alive,
    assert_child_leaves_when_its_parent_is_killed,
    wait_for,
)


class Recording:
    """The processes, with every invocation they answered kept (the gateway calls `invoke`)."""

    def __init__(self, environments: ProcessEnvironments):
        self.environments = environments
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()

    def invoke(self, name: str, event: object) -> Invocation:
        invocation = self.environments.invoke(name, event)
        with self._lock:
            self.invocations.append(invocation)
        return invocation


@pytest.fixture
def processes(local_cloud: LocalCloud) -> Iterator[tuple[ApiClient, Recording]]:
    deployment = local_cloud.deployment
    environments = ProcessEnvironments(
        deployment.function(deployment.api.function), dict(os.environ), limit=2
    )
    recording = Recording(environments)
    gateway = LocalApiGateway(deployment.api, recording, signing_key, REGION).start()
    try:
        yield replace(ApiClient.for_cloud(local_cloud), api_url=gateway.url), recording
    finally:
        gateway.stop()
        environments.stop(Deadline.after(5.0))


def test_signed_requests_are_answered_by_processes_of_their_own_as_their_own_principals(
    processes: tuple[ApiClient, Recording],
):
    api, recording = processes
    reply = api.call("GET", "/v1/me", profile="alice")
    assert reply.status == 200, reply.body
    assert reply.body["username"] == "alice"
    [first] = recording.invocations
    assert first.pid is not None and first.pid != os.getpid()
    assert recording.environments.pids() == [first.pid]

    def who(profile: str) -> tuple[str, str]:
        answer = api.call("GET", "/v1/me", profile=profile)
        assert answer.status == 200, answer.body
        return profile, answer.body["username"]

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(who, ["alice", "bob"] * 12))
    assert [(asked, got) for asked, got in answers if asked != got] == []
    served_by = {i.pid for i in recording.invocations}
    assert os.getpid() not in served_by
    assert len(recording.environments.pids()) <= 2  # never more than the limit

    workers = recording.environments.pids()
    recording.environments.stop(Deadline.after(5.0))
    assert [pid for pid in served_by | set(workers) if alive(pid)] == []
    stopped = api.call("GET", "/v1/me", profile="alice")
    assert stopped.status == 502  # the gateway's answer when the function was not invoked


def test_a_process_that_dies_during_a_request_is_a_502_and_the_next_request_gets_a_new_one(
    processes: tuple[ApiClient, Recording],
):
    api, recording = processes
    assert api.call("GET", "/v1/me", profile="bob").status == 200
    [worker] = recording.environments.pids()
    os.kill(worker, signal.SIGSTOP)  # it will take the next request and never answer
    replies = []
    request = threading.Thread(
        target=lambda: replies.append(api.call("GET", "/v1/me", profile="bob"))
    )
    request.start()
    wait_for(lambda: recording.environments.busy_pids() == [worker])
    os.kill(worker, signal.SIGKILL)
    request.join(timeout=30)
    assert [r.status for r in replies] == [502]
    assert replies[0].body == {"message": "Internal server error"}
    assert recording.invocations[-1].payload["errorType"] == "Runtime.ExitError"
    assert not alive(worker)  # reaped

    after = api.call("GET", "/v1/me", profile="bob")
    assert after.status == 200 and after.body["username"] == "bob"
    assert recording.invocations[-1].pid not in (worker, None)
    assert recording.environments.started == 2


def test_a_request_past_the_function_timeout_is_a_502_and_its_process_is_ended(
    local_cloud: LocalCloud,
):
    deployment = local_cloud.deployment
    # Long enough for a first request's imports on a loaded machine (2 s was not, at load
    # average 13), short enough to wait out once.
    spec = replace(deployment.function(deployment.api.function), timeout_seconds=5)
    environments = ProcessEnvironments(spec, dict(os.environ), limit=1)
    recording = Recording(environments)
    gateway = LocalApiGateway(deployment.api, recording, signing_key, REGION).start()
    api = replace(ApiClient.for_cloud(local_cloud), api_url=gateway.url)
    try:
        assert environments.provision() == 1  # its cold start, before any request
        [worker] = environments.pids()
        assert api.call("GET", "/v1/me", profile="alice").status == 200
        assert recording.invocations[-1].pid == worker and environments.started == 1
        os.kill(worker, signal.SIGSTOP)  # as a handler stuck in a call would
        reply = api.call("GET", "/v1/me", profile="alice")
        assert reply.status == 502, reply.body
        error = recording.invocations[-1].payload
        assert error["errorType"] == "Sandbox.Timedout"
        assert error["errorMessage"].startswith("Task timed out after")
        assert environments.pids() == [] and not alive(worker)
    finally:
        gateway.stop()
        environments.stop(Deadline.after(5.0))


PARENT = """
import os, sys
from cdk_app.declaration import DEPLOYMENT
from localcloud.processes import ProcessEnvironments
processes = ProcessEnvironments(
    DEPLOYMENT.function(DEPLOYMENT.api.function), dict(os.environ, AWS_REGION="us-east-2"), 1
)
assert processes.provision() == 1
print(processes.pids()[0], flush=True)
sys.stdin.read()  # until killed
"""


def test_an_api_process_leaves_when_the_cloud_process_is_killed():
    assert_child_leaves_when_its_parent_is_killed(PARENT)
