"""`python -m localcloud.faults` puts the running cloud through an outage for as long as it
is told, then ends it: the database refusing connections, the Kubernetes API answering 503,
an AWS service throttling. Bad requests are refused with a sentence and break nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from localcloud.faults import main
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]

OUTAGE_SECONDS = 120  # ended early by Ctrl+C, as a person at the terminal would


@pytest.fixture
def stack(local_cloud: LocalCloud, tmp_path: Path) -> Path:
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(local_cloud.describe()))
    return path


@contextmanager
def outage(stack: Path, *fault: str) -> Iterator[None]:
    """The tool in its own process; yields once it said the fault is in force, then stops
    it with Ctrl+C (SIGINT) and checks it ended the outage and exited 0."""
    arguments = [*fault, "--seconds", str(OUTAGE_SECONDS), "--stack", str(stack)]
    tool = subprocess.Popen(
        [sys.executable, "-m", "localcloud.faults", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert tool.stdout is not None
        first = tool.stdout.readline()
        assert first.endswith(f": {OUTAGE_SECONDS} s\n"), (first, tool.stderr.read())  # type: ignore[union-attr]
        yield
    finally:
        tool.send_signal(signal.SIGINT)
        out, err = tool.communicate(timeout=30)
    assert tool.returncode == 0, err
    assert out.endswith("interrupted\n" + f"{' '.join(fault)}: ended\n"), out


def _kubernetes_status(cloud: LocalCloud) -> int:
    assert cloud.kubernetes is not None
    return cloud.kubernetes.handle("GET", "/api/v1/nodes", {}, b"")[0]


def test_a_kubernetes_outage_answers_503_until_it_ends(local_cloud: LocalCloud, stack: Path):
    with outage(stack, "kubernetes-outage"):
        wait_for(lambda: _kubernetes_status(local_cloud) == 503, 2, "outage in force")
    assert _kubernetes_status(local_cloud) == 401  # served again: refused for its missing token


def _connects(cloud: LocalCloud) -> bool:
    try:
        with psycopg.connect(cloud.database_url, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def test_a_database_outage_ends_connections_and_the_api_answers_503(
    local_cloud: LocalCloud, stack: Path, api: ApiClient
):
    with psycopg.connect(local_cloud.database_url) as held, outage(stack, "database-outage"):
        wait_for(lambda: not _connects(local_cloud), 2, "connections refused")
        reply = api.call("GET", "/v1/me", profile="alice")
        assert reply.status == 503, reply.body
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")  # ended, as a failover ends them
    assert _connects(local_cloud)
    assert api.call("GET", "/v1/me", profile="alice").status == 200


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        (
            "stepfunctions",
            lambda c: c("stepfunctions").list_state_machines(),
            "ThrottlingException",
        ),
        ("ec2", lambda c: c("ec2").describe_volumes(), "RequestLimitExceeded"),
        ("sts", lambda c: c("sts").get_caller_identity(), "Throttling"),
        ("autoscaling", lambda c: c("autoscaling").describe_auto_scaling_groups(), "Throttling"),
    ],
)
def test_an_aws_throttle_answers_as_aws_does_until_it_ends(
    local_cloud: LocalCloud,
    stack: Path,
    service: str,
    call: Callable[[Callable[[str], object]], object],
    code: str,
):
    assert local_cloud.aws is not None
    session = local_cloud.aws.admin_session()
    once = Config(retries={"max_attempts": 1, "mode": "standard"})

    def client(name: str) -> object:
        return session.client(name, endpoint_url=local_cloud.aws.endpoint_url, config=once)  # type: ignore[union-attr,call-overload]

    with outage(stack, "aws-throttle", service):
        with pytest.raises(ClientError) as throttled:
            call(client)
        assert throttled.value.response["Error"]["Code"] == code
    call(client)  # served again


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["aws-throttle", "sqs", "--seconds", "1"], "cannot throttle 'sqs'"),
        (["database-outage", "--seconds", "0"], "--seconds must be more than 0"),
        (["kubernetes-outage", "--seconds", "7200"], "at most 3600"),
    ],
)
def test_a_fault_that_cannot_be_injected_is_refused_and_nothing_changes(
    local_cloud: LocalCloud,
    stack: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
):
    assert main([*arguments, "--stack", str(stack)]) == 2
    assert message in capsys.readouterr().err
    assert local_cloud.faults is not None and local_cloud.faults.active() == {}


def test_without_the_stack_or_its_token_nothing_is_injected(
    local_cloud: LocalCloud, stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    missing = tmp_path / "missing.json"
    assert main(["database-outage", "--seconds", "1", "--stack", str(missing)]) == 2
    assert "start `make run`" in capsys.readouterr().err
    forged = json.loads(stack.read_text()) | {"fault_control_token": "guessed"}
    stack.write_text(json.dumps(forged))
    assert main(["database-outage", "--seconds", "1", "--stack", str(stack)]) == 2
    assert "x-local-cloud-token header" in capsys.readouterr().err
    assert local_cloud.faults is not None and local_cloud.faults.active() == {}
    assert _connects(local_cloud)
