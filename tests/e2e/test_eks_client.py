"""The EKS client as a fresh Lambda builds it: a monotonic clock near zero still gets a
token, and a hung API server fails a call within the request timeout as a transient error."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from gpudev.cluster.objects_client import KubernetesUnavailable, ReservationObjects
from localcloud.stack import LocalCloud
from tests.e2e.conftest import eks_api_client


@pytest.mark.parametrize("uptime", [0.0, 0.5, 599.0])
def test_a_freshly_booted_machine_is_authorised_at_once(local_cloud: LocalCloud, uptime: float):
    api_client = eks_api_client(local_cloud, clock=lambda: uptime)
    try:
        nodes = client.CoreV1Api(api_client).list_node().items
    finally:
        api_client.close()
    assert nodes, "the stand-in refuses requests without a valid EKS token"


def test_a_hung_api_server_is_a_transient_failure_within_the_timeout(local_cloud: LocalCloud):
    assert local_cloud.kubernetes is not None
    api_client = eks_api_client(local_cloud, timeout_seconds=0.5)
    objects = ReservationObjects(api_client, "gpu-dev")
    local_cloud.kubernetes.faults.delay_seconds = 3.0
    started = time.monotonic()
    try:
        with pytest.raises(KubernetesUnavailable, match="list_namespaced_pod"):
            objects.pods("00000000-0000-0000-0000-000000000000")
    finally:
        local_cloud.kubernetes.faults.clear()
        api_client.close()
    # one retry of a dropped connection at most: two reads of 0.5 s, never the 3 s delay
    assert time.monotonic() - started < 2.0
