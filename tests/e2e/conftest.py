"""The e2e tier: the local cloud started once for this package, driven over HTTP.

Here the jobs queue has no consumer, so API tests can read exactly what was enqueued; the
lifecycle tier (tests/lifecycle) runs the whole deployment, consumer included. Fixtures are
package-scoped so that the two clouds (each sets process-wide environment) never overlap."""

from __future__ import annotations

import configparser
import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from localcloud.aws import SSO_PROFILE
from localcloud.stack import LocalCloud, Options
from tests.e2e.fixtures.deployment import API_TIER
from tests.support.api import ApiClient
from tests.support.clouds import package_cloud

ROOT = Path(__file__).resolve().parents[2]

local_cloud = package_cloud(
    "gpudev_e2e",
    # Tests leave many reservations live (no consumer here): limits out of the way,
    # except where a test lowers them (test_user_limits.py).
    Options(
        tick_seconds=0.5,
        kubelet_delay_seconds=0.2,
        probe_seconds=0.3,
        termination_seconds_scale=0.1,
        max_live_reservations_per_user=10_000,
        max_gpus_per_user=100_000,
        api_requests_per_minute=1_000_000,  # the per-principal rate out of the way too
        api_request_burst=1_000_000,
    ),
    API_TIER,
)


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
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~/.ssh/config (ssh-include)
    # The in-process functions keep their own env credentials; an explicit --profile wins.
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    api_url = local_cloud.describe()["api_url"]
    # The user has set the GitHub user whose keys open their pods (`gpu-dev config set`).
    settings = tmp_path / "config" / "gpu-dev" / "config.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"github_user": "alice"}))

    def invoke(
        *args: str,
        profile: str = "alice",
        api: bool = True,
        input: str | None = None,
        options_after: bool = False,
    ) -> Result:
        """The global options go before the command, or after it with `options_after`."""
        options = ["--profile", profile, "--region", "us-east-2"]
        if api:
            options += ["--api-url", api_url]
        line = [*args, *options] if options_after else [*options, *args]
        return CliRunner().invoke(cli, line, input=input, catch_exceptions=False)

    yield invoke


def eks_api_client(
    cloud: LocalCloud,
    clock: Callable[[], float] = time.monotonic,
    timeout_seconds: float = 10.0,
    profile: str = SSO_PROFILE,
) -> Any:
    """An ApiClient built the way our functions build it (EKS describe + STS-presigned
    token), as `profile` (carol, the cluster's admin, as an operator would be), with the
    clock and request timeout given."""
    import boto3

    profiles = configparser.ConfigParser()
    profiles.read(cloud.credentials_file)
    session = boto3.Session(
        aws_access_key_id=profiles[profile]["aws_access_key_id"],
        aws_secret_access_key=profiles[profile]["aws_secret_access_key"],
        aws_session_token=profiles[profile].get("aws_session_token"),
        region_name="us-east-2",
    )
    return eks_api_client_as(cloud, session, clock, timeout_seconds)


def eks_api_client_as(
    cloud: LocalCloud,
    session: Any,
    clock: Callable[[], float] = time.monotonic,
    timeout_seconds: float = 10.0,
) -> Any:
    """An ApiClient built the way our functions build it, signing as `session`."""
    from gpudev.aws import AwsClients
    from gpudev.cluster.eks import kubernetes_api_client
    from gpudev.settings import ClusterSettings

    assert cloud.kubernetes is not None
    aws = AwsClients(session=session, region="us-east-2")  # endpoints: the cloud's environment
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


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A state directory for a local cloud of a test's own (tests/support/local_cloud_process.py),
    under .local: the unprivileged PostgreSQL user can reach it."""
    path = ROOT / ".local" / "pytest-child-cloud" / uuid.uuid4().hex[:8]
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
