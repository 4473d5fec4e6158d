"""The contract tier: schemathesis drives the API of a local cloud of its own (the e2e tier's
deployment: no jobs consumer), from the committed OpenAPI document, every request signed as
the CLI signs it. Its own cloud, because what schemathesis creates (reservations, disks of
every shape) must not show in the e2e tier's reads."""

from __future__ import annotations

from localcloud.stack import Options
from tests.e2e.fixtures.deployment import API_TIER
from tests.support.clouds import package_cloud

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
    API_TIER,
)
