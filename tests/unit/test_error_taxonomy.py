"""Every exception a reservation task can raise leaves under one of the three names the
state machine knows: Transient (retried for minutes), StateChanged (run again on the fresh
row) or Permanent (the reservation fails with the message as its reason)."""

from __future__ import annotations

import importlib.util
from http import HTTPStatus
from pathlib import Path

import psycopg
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from kubernetes.client.exceptions import ApiException
from psycopg import errors as pg
from psycopg_pool import PoolTimeout
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError
from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeout

from gpudev.cluster.objects_client import KubernetesUnavailable, ObjectNameTaken
from gpudev.errors import DatabaseBusy, DatabaseUnavailable, NotFound
from gpudev.lifecycle.taxonomy import (
    Permanent,
    StateChanged,
    Transient,
    as_step_functions_error,
    classify,
    step_functions_errors,
)

ROOT = Path(__file__).resolve().parents[2]


def _aws(code: str, status: int = 400, operation: str = "SendTaskSuccess") -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        operation,
    )


def _k8s(status: int) -> ApiException:
    """As the Kubernetes client raises an HTTP error status."""
    return ApiException(status=status, reason=HTTPStatus(status).phrase)


TRANSIENT = [
    # the database: a lost or refused connection, failover, timeouts, the pool
    psycopg.OperationalError("server closed the connection unexpectedly"),
    pg.AdminShutdown("terminating connection due to administrator command"),
    pg.CannotConnectNow("the database system is starting up"),
    pg.ConnectionFailure("connection failure"),
    pg.TooManyConnections("too many clients"),
    pg.ReadOnlySqlTransaction("cannot execute UPDATE in a read-only transaction"),
    pg.QueryCanceled("canceling statement due to statement timeout"),
    pg.SerializationFailure("could not serialize access"),
    pg.DeadlockDetected("deadlock detected"),
    PoolTimeout("couldn't get a connection after 30.00 sec"),
    DatabaseBusy("the database is busy: a statement ran past its 30 s limit"),
    DatabaseUnavailable("no database connection became free within 5 s"),
    # Kubernetes: 5xx and 429, or no answer
    KubernetesUnavailable("replace_namespaced_config_map: HTTP 500"),
    _k8s(500),
    _k8s(503),
    _k8s(429),
    MaxRetryError(None, "/api/v1/pods", reason=None),  # type: ignore[arg-type]
    NewConnectionError(None, "refused"),  # type: ignore[arg-type]
    ProtocolError("Connection aborted."),
    Urllib3ReadTimeout(None, "/api/v1/pods", "read timed out"),  # type: ignore[arg-type]
    # AWS: throttling, 5xx, unreachable
    _aws("ThrottlingException"),
    _aws("TooManyRequestsException", 429),
    _aws("ServiceUnavailable", 503),
    _aws("SomethingNew", 502),
    _aws("InternalFailure", 500, "DescribeExecution"),
    EndpointConnectionError(endpoint_url="https://states.us-east-2.amazonaws.com"),
    ConnectTimeoutError(endpoint_url="https://eks.us-east-2.amazonaws.com"),
    ReadTimeoutError(endpoint_url="https://states.us-east-2.amazonaws.com"),
    ConnectionClosedError(endpoint_url="https://sts.us-east-2.amazonaws.com"),
    # sockets
    ConnectionResetError(104, "Connection reset by peer"),
    TimeoutError("timed out"),
]

PERMANENT = [
    ValueError("unknown task"),
    KeyError("reservation_id"),
    NotFound("no reservation 1234"),
    ObjectNameTaken("Pod gpu-dev-1234 already exists for reservation 5678"),
    _k8s(422),
    _k8s(403),
    _k8s(404),
    pg.UniqueViolation("duplicate key value"),
    pg.UndefinedColumn("column does not exist"),
    _aws("AccessDeniedException"),
    _aws("InvalidToken"),
    RuntimeError("1 of 2 nodes are allocated"),
]


@pytest.mark.parametrize("exc", TRANSIENT, ids=lambda e: type(e).__name__)
def test_faults_that_pass_are_transient(exc):
    assert classify(exc) is Transient


@pytest.mark.parametrize("exc", PERMANENT, ids=lambda e: type(e).__name__)
def test_faults_that_retrying_cannot_fix_are_permanent(exc):
    assert classify(exc) is Permanent


@pytest.mark.parametrize("name", [Transient, Permanent, StateChanged], ids=lambda c: c.__name__)
def test_our_own_names_pass_through_unchanged(name):
    exc = name("as raised")
    assert classify(exc) is name and as_step_functions_error(exc) is exc


def test_the_mapped_error_keeps_the_original_class_and_message_for_the_reason():
    mapped = as_step_functions_error(pg.AdminShutdown("terminating connection"))
    assert type(mapped).__name__ == "Transient"
    assert str(mapped) == "AdminShutdown: terminating connection"
    assert str(as_step_functions_error(KeyError())) == "KeyError"


def test_the_block_raises_under_the_state_machine_name_chained_to_the_original():
    original = _aws("ThrottlingException")
    with pytest.raises(Transient) as raised, step_functions_errors():
        raise original
    assert raised.value.__cause__ is original
    with pytest.raises(StateChanged), step_functions_errors():
        raise StateChanged("the row moved on")


def test_the_task_handler_names_an_unknown_task_permanent():
    spec = importlib.util.spec_from_file_location(
        "reservation_tasks_handler", ROOT / "functions/reservation_tasks/handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "tasks", 256, "request"
        invoked_function_arn = "arn:aws:lambda:us-east-2:123456789012:function:tasks"

    with pytest.raises(Permanent, match="invalid task event: unknown task 'dance'"):
        module.handler({"task": "dance", "reservation_id": "0" * 32}, Context())


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (psycopg.OperationalError("connection refused"), "waiting for the database"),
        (PoolTimeout("couldn't get a connection"), "waiting for the database"),
        (_k8s(503), "waiting for the Kubernetes API"),
        (KubernetesUnavailable("the API server did not answer"), "waiting for the Kubernetes API"),
        (_aws("ThrottlingException"), "waiting for AWS"),
        (EndpointConnectionError(endpoint_url="https://ec2"), "waiting for AWS"),
    ],
)
def test_a_transient_fault_says_which_dependency_the_reservation_waits_for(error, line):
    from gpudev.lifecycle.taxonomy import waiting_for

    assert waiting_for(error) == line
    # as the handler sees it: the mapped Transient, raised from the original
    mapped = as_step_functions_error(error)
    mapped.__cause__ = error
    assert waiting_for(mapped) == line


def test_github_not_answering_is_waited_for_and_a_fault_of_no_dependency_names_none():
    from gpudev.lifecycle.keys import GithubUnavailable
    from gpudev.lifecycle.taxonomy import waiting_for

    assert waiting_for(GithubUnavailable("github.com timed out")) == "waiting for GitHub"
    assert waiting_for(TimeoutError("socket timed out")) is None
    assert waiting_for(Transient("the row is locked")) is None
