"""The contract tier: schemathesis drives the API of a local cloud of its own (the real
deployment, no jobs consumer), from the committed OpenAPI document, every request signed as
the CLI signs it. Its own cloud, because what schemathesis creates (reservations, disks of
every shape) must not show in the e2e tier's reads."""

from __future__ import annotations

from dataclasses import replace

from cdk_app.declaration import DEPLOYMENT, SWEEPER_SCHEDULE
from localcloud.stack import Options
from tests.support.clouds import package_cloud

# The real deployment with the jobs queue's consumer detached and the sweeper not ticked, as
# the e2e tier runs it: what schemathesis submits stays as the API left it, and nothing is
# provisioned.
API_ONLY = replace(
    DEPLOYMENT.without_schedules(SWEEPER_SCHEDULE),
    queues=tuple(replace(q, consumer=None) for q in DEPLOYMENT.queues),
)

local_cloud = package_cloud(
    "gpudev_contract",
    Options(
        tick_seconds=0.5,
        kubelet_delay_seconds=0.2,
        probe_seconds=0.3,
        termination_seconds_scale=0.1,
        # Generated requests are many and may reserve much: limits out of the way, so the
        # answers are the API's rules, not the caller's share.
        max_live_reservations_per_user=1_000_000,
        max_gpus_per_user=10_000_000,
        api_requests_per_minute=1_000_000,
        api_request_burst=1_000_000,
    ),
    API_ONLY,
)
