"""The lifecycle tier: the whole deployment (jobs consumer, reservation state machine,
allocator) on the local cloud with a compressed clock: one hour lasts 36 s, so a clock
minute is 0.6 s, a pod must be ready within 6 s, and a deleted pod terminates for 0.5 s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from cdk_app.declaration import DEPLOYMENT, SWEEPER_SCHEDULE
from gpudev_cli.main import cli
from localcloud.stack import LocalCloud, Options
from tests.support.api import ApiClient
from tests.support.clouds import package_cloud

SECONDS_PER_HOUR = 36.0
MINUTE = SECONDS_PER_HOUR / 60
# A start's bound (600 s in AWS): enough for 36 concurrent starts on a loaded 2-core machine,
# whose pods each ship their output, pull, mount the share and pass their probes.
READY_TIMEOUT_SECONDS = 10.0
# The pods' image: one built from deploy/dev-image, so it has jupyter-lab (the stand-in's
# `jupyter_images`); test_jupyter_check.py takes it away for one reservation.
DEV_IMAGE = "registry.local/gpu-dev:lifecycle"


local_cloud = package_cloud(
    "gpudev_lifecycle",
    Options(
        tick_seconds=1.0,
        kubelet_delay_seconds=0.2,
        probe_seconds=1.5,  # Running for 1.5 s before sshd answers (Ready)
        seconds_per_hour=SECONDS_PER_HOUR,
        ready_timeout_seconds=READY_TIMEOUT_SECONDS,
        ready_poll_seconds=1,
        # `Is the pod ready?` watches the pod this long per call: past the kubelet's 0.2 s
        # and the probe's 1.5 s, while holding a connection of the pool every function
        # shares here no longer than that.
        ready_watch_seconds=2.0,
        termination_seconds_scale=0.05,  # our pods' 10 s grace lasts 0.5 s
        pod_image=DEV_IMAGE,
        jupyter_images=(DEV_IMAGE,),
        # The simulation runs dozens of reservations per user at once.
        max_live_reservations_per_user=10_000,
        max_gpus_per_user=100_000,
        api_requests_per_minute=1_000_000,  # the per-principal rate out of the way too
        api_request_burst=1_000_000,
        # A webhook's post waits 1 s, not 5 (tests/lifecycle/test_notifications.py).
        notify_webhook_timeout_seconds=1.0,
    ),
    # Tests run the sweeper by hand (test_sweeper.py): ticked every second, it would
    # judge the rows and executions other tests build on purpose.
    DEPLOYMENT.without_schedules(SWEEPER_SCHEDULE),
)


@pytest.fixture(scope="package")
def api(local_cloud: LocalCloud) -> ApiClient:
    return ApiClient.for_cloud(local_cloud)


@pytest.fixture(autouse=True)
def empty_cluster(local_cloud: LocalCloud, api: ApiClient) -> Iterator[None]:
    """Every test starts and ends with no live reservation and no fault injected."""
    from tests.lifecycle.helpers import end_everything

    yield
    assert local_cloud.kubernetes is not None and local_cloud.cluster is not None
    local_cloud.kubernetes.faults.clear()
    local_cloud.cluster.kubelet.image_pulls_fail = False
    local_cloud.cluster.kubelet.missing_images = frozenset()
    local_cloud.cluster.kubelet.jupyter_images = frozenset({DEV_IMAGE})
    local_cloud.cluster.probes.probes_fail = False
    local_cloud.pollers["Jobs"].paused = False
    assert local_cloud.ticker is not None
    local_cloud.ticker.paused.clear()
    end_everything(api, local_cloud)


@pytest.fixture
def gpu_dev(local_cloud: LocalCloud, tmp_path: Any, monkeypatch: Any) -> Any:
    """`gpu-dev ARGS` against the local cloud (as alice, or `profile`): its result."""
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    url = local_cloud.describe()["api_url"]

    def run(*args: str, profile: str = "alice") -> Any:
        options = ["--profile", profile, "--region", "us-east-2", "--api-url", url]
        return CliRunner().invoke(cli, [*options, *args], catch_exceptions=False)

    return run
