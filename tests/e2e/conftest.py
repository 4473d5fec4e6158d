"""The e2e tier: the local cloud started once for this package, driven over HTTP.

Here the jobs queue has no consumer, so API tests can read exactly what was enqueued; the
lifecycle tier (tests/lifecycle) runs the whole deployment, consumer included. Fixtures are
package-scoped so that the two clouds (each sets process-wide environment) never overlap."""

from __future__ import annotations

import configparser
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from click.testing import CliRunner, Result

from cdk_app.declaration import Deployment
from localcloud.stack import LocalCloud, Options
from tests.conftest import create_database, database_url_for, drop_database
from tests.e2e.fixtures.deployment import API_TIER


@contextmanager
def running_cloud(
    admin_conn: psycopg.Connection[Any],
    postgres_url: str,
    state_dir: Path,
    database: str,
    options: Options,
    deployment: Deployment,
) -> Iterator[LocalCloud]:
    """A local cloud on its own database of the session's PostgreSQL, removed afterwards."""
    drop_database(admin_conn, database)
    create_database(admin_conn, database)
    cloud = LocalCloud(
        state_dir,
        replace(options, database_url=database_url_for(postgres_url, database)),
        deployment=deployment,
    ).start()
    try:
        yield cloud
    finally:
        cloud.stop()
        drop_database(admin_conn, database)


@pytest.fixture(scope="package")
def local_cloud(
    postgres_url: str,
    admin_conn: psycopg.Connection[Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalCloud]:
    with running_cloud(
        admin_conn,
        postgres_url,
        tmp_path_factory.mktemp("local-cloud"),
        "gpudev_e2e",
        # Tests leave many reservations live (no consumer here): limits out of the way,
        # except where a test lowers them (test_user_limits.py).
        Options(
            tick_seconds=0.5,
            kubelet_delay_seconds=0.2,
            termination_seconds_scale=0.1,
            max_live_reservations_per_user=10_000,
            max_gpus_per_user=100_000,
        ),
        API_TIER,
    ) as cloud:
        yield cloud


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class ApiClient:
    """Signs like the CLI (botocore SigV4, execute-api) and lets tests break the request."""

    base_url: str
    region: str
    profiles: configparser.ConfigParser

    @classmethod
    def for_cloud(cls, cloud: LocalCloud) -> ApiClient:
        return cls.for_cloud_description(cloud.describe())

    @classmethod
    def for_cloud_description(cls, stack: dict[str, Any]) -> ApiClient:
        """From a cloud's description (`.local/stack.json` of a `python -m localcloud`)."""
        profiles = configparser.ConfigParser()
        profiles.read(stack["credentials_file"])
        return cls(stack["api_url"], stack["region"], profiles)

    def credentials(self, profile: str) -> Credentials:
        """A profile's keys, with its session token when it has one (the SSO user's)."""
        section = self.profiles[profile]
        return Credentials(
            section["aws_access_key_id"],
            section["aws_secret_access_key"],
            section.get("aws_session_token"),
        )

    def signed_headers(
        self,
        method: str,
        path: str,
        body: bytes | None,
        credentials: Credentials,
        service: str = "execute-api",
        extra_headers: dict[str, str] | None = None,
    ) -> dict[str, str]:
        """The headers to send; `extra_headers` are signed too (botocore signs an
        `X-Amz-Content-SHA256` given here with its value as the payload hash)."""
        request = AWSRequest(
            method=method,
            url=self.base_url + path,
            data=body,
            headers={"Content-Type": "application/json", **(extra_headers or {})},
        )
        SigV4Auth(credentials, service, self.region).add_auth(request)
        return dict(request.headers.items())

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> Reply:
        request = urllib.request.Request(
            self.base_url + path, data=body, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request) as response:
                return Reply(response.status, dict(response.headers), json.loads(response.read()))
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers), json.loads(error.read()))

    def call(
        self, method: str, path: str, profile: str | None = "alice", body: Any = None
    ) -> Reply:
        data = json.dumps(body).encode() if body is not None else None
        headers = (
            self.signed_headers(method, path, data, self.credentials(profile)) if profile else {}
        )
        return self.send(method, path, headers, data)


@pytest.fixture(scope="package")
def api(local_cloud: LocalCloud) -> ApiClient:
    return ApiClient.for_cloud(local_cloud)


@pytest.fixture
def run(
    local_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Result]]:
    """The real `gpu-dev` CLI, in-process, as a profile of the cloud's credentials file."""
    from gpudev_cli.main import cli

    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    # The in-process functions keep their own env credentials; an explicit --profile wins.
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    api_url = local_cloud.describe()["api_url"]

    def invoke(
        *args: str, profile: str = "alice", api: bool = True, input: str | None = None
    ) -> Result:
        options = ["--profile", profile, "--region", "us-east-2"]
        if api:
            options += ["--api-url", api_url]
        return CliRunner().invoke(cli, [*options, *args], input=input, catch_exceptions=False)

    yield invoke


def wait_for(condition: Callable[[], Any], timeout: float = 15, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s: {message}")


def eks_api_client(
    cloud: LocalCloud,
    clock: Callable[[], float] = time.monotonic,
    timeout_seconds: float = 10.0,
) -> Any:
    """An ApiClient built the way our functions build it (EKS describe + STS-presigned
    token), as alice, with the clock and request timeout given."""
    import boto3

    from gpudev.aws import AwsClients
    from gpudev.cluster.eks import kubernetes_api_client
    from gpudev.settings import ClusterSettings

    profiles = configparser.ConfigParser()
    profiles.read(cloud.credentials_file)
    session = boto3.Session(
        aws_access_key_id=profiles["alice"]["aws_access_key_id"],
        aws_secret_access_key=profiles["alice"]["aws_secret_access_key"],
        region_name="us-east-2",
    )
    assert cloud.aws is not None and cloud.kubernetes is not None
    aws = AwsClients(session=session, region="us-east-2", endpoint_url=cloud.aws.endpoint_url)
    settings = ClusterSettings(
        eks_cluster_name=cloud.cluster_name,
        kubernetes_endpoint_url=cloud.kubernetes.url,
        kubernetes_timeout_seconds=timeout_seconds,
    )
    return kubernetes_api_client(aws, settings, clock)


@pytest.fixture(scope="package")
def core(local_cloud: LocalCloud) -> Iterator[Any]:
    """CoreV1Api built the way our functions build it."""
    from kubernetes import client

    api_client = eks_api_client(local_cloud)
    yield client.CoreV1Api(api_client)
    api_client.close()
