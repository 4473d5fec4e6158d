"""The pre-puller tier: the whole deployment on a local cloud of its own with the image
pre-puller on (`Options.prepull`: deploy/kubernetes/prepuller/ applied, the availability
updater given the local tools image) and the kubelet pulling for a time by size, so a cold
start waits for its image and a pre-pulled one does not. A package of its own: a local cloud
sets process-wide environment, and the e2e and lifecycle tiers' clouds have no pre-puller."""

from __future__ import annotations

import pytest

from cdk_app.declaration import DEPLOYMENT, SWEEPER_SCHEDULE
from localcloud.stack import LocalCloud, Options
from tests.support.api import ApiClient
from tests.support.clouds import package_cloud

SECONDS_PER_HOUR = 360.0  # 10× compressed
# The default image (9.3 GB) in 30 s of the clock, 3 s of wall time; the team image in 2 s.
PULL_BYTES_PER_SECOND = 310_000_000

local_cloud = package_cloud(
    "gpudev_prepull",
    Options(
        tick_seconds=0.5,  # the availability updater (and the pre-puller's step) twice a second
        kubelet_delay_seconds=0.2,
        probe_seconds=0.3,
        termination_seconds_scale=0.05,
        seconds_per_hour=SECONDS_PER_HOUR,
        ready_timeout_seconds=120.0,  # a cold pull on a loaded machine
        ready_poll_seconds=1,
        ready_watch_seconds=2.0,
        image_pull_bytes_per_second=PULL_BYTES_PER_SECOND,
        prepull=True,
        api_requests_per_minute=1_000_000,
        api_request_burst=1_000_000,
    ),
    DEPLOYMENT.without_schedules(SWEEPER_SCHEDULE),
)


@pytest.fixture(scope="package")
def api(local_cloud: LocalCloud) -> ApiClient:
    return ApiClient.for_cloud(local_cloud)
