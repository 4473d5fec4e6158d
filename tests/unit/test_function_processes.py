"""Which functions run in processes of their own (localcloud/processes.py FunctionProcesses),
and with how many at most: decided at construction, without starting any process."""

from __future__ import annotations

from typing import Any

from cdk_app.declaration import DEPLOYMENT
from localcloud.lambdas import Invocation
from localcloud.processes import FunctionProcesses


class Recorded:
    """The in-process side: records what it was asked to run."""

    def __init__(self) -> None:
        self.invoked: list[str] = []

    def invoke(self, name: str, event: Any) -> Invocation:
        self.invoked.append(name)
        return Invocation({"ran": name}, False, "request")


def test_a_reserved_concurrency_caps_a_functions_processes_and_zero_keeps_it_in_process():
    in_process = Recorded()
    limits = {spec.name: 4 for spec in DEPLOYMENT.functions} | {"Migrate": 0}
    processes = FunctionProcesses(DEPLOYMENT.functions, {}, limits, in_process=in_process)

    assert processes.of["JobsConsumer"].limit == 4  # no reserved concurrency
    assert processes.of["Allocator"].limit == 2  # reserved_concurrency=2
    assert processes.of["Sweeper"].limit == 1  # reserved_concurrency=1: never two at once
    assert "Migrate" not in processes.of
    assert processes.invoke("Migrate", {}).payload == {"ran": "Migrate"}
    assert in_process.invoked == ["Migrate"]
    assert all(environments.started == 0 for environments in processes.of.values())


def test_once_closed_an_invocation_is_refused_and_starts_no_process():
    """The stop's first step: nothing new runs while what runs drains."""
    in_process = Recorded()
    processes = FunctionProcesses(DEPLOYMENT.functions, {}, {"Allocator": 2}, in_process=in_process)
    processes.close()

    refused = processes.invoke("Allocator", {})

    assert refused.errored and refused.payload["errorType"] == "ServiceException"
    assert "stopping" in refused.payload["errorMessage"]
    assert processes.of["Allocator"].started == 0
    assert in_process.invoked == []


def test_a_function_with_an_identity_of_its_own_signs_with_it_and_the_others_with_the_clouds():
    """Cluster-using functions' processes sign as their own role (their access entry's
    group), as in Lambda; the others keep the cloud's shared credentials."""
    shared = {"AWS_ACCESS_KEY_ID": "AKIASHARED", "AWS_SECRET_ACCESS_KEY": "shared"}
    own = {"AWS_ACCESS_KEY_ID": "ASIAALLOCATOR", "AWS_SESSION_TOKEN": "token"}
    limits = {"Allocator": 1, "JobsConsumer": 1}
    processes = FunctionProcesses(
        DEPLOYMENT.functions, shared, limits, Recorded(), identities={"Allocator": own}
    )

    allocator = processes.of["Allocator"]._environment
    assert allocator["AWS_ACCESS_KEY_ID"] == "ASIAALLOCATOR"
    assert allocator["AWS_SESSION_TOKEN"] == "token"
    assert processes.of["JobsConsumer"]._environment["AWS_ACCESS_KEY_ID"] == "AKIASHARED"
