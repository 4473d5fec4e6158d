"""Profiling reservations end to end (docs/security.md "Isolation"): carol's SSO role is
the local cloud's PROFILING_ROLES. Her profiling reservation runs in gpu-dev-profiling on a
whole node that nobody else's pod shares while it runs; with a node labelled and tainted for
profiling, it runs there (its pod selecting the label and tolerating the taint, which the
stand-in's kubelet checks) and ordinary reservations stay off that node even when it is
free."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import allocated_slots, objects_of, reserve, show, wait_for_status
from tests.support.waiting import wait_for

PROFILING = "gpu-dev.pytorch.org/profiling"


def _queued_first(api: Any, reservation_id: str, profile: str) -> None:
    wait_for_status(api, reservation_id, "queued", profile=profile)
    wait_for(
        lambda: show(api, reservation_id, profile)["queue_position"] == 1,
        message="first in its queue",
    )


def _pod(cloud: LocalCloud, reservation_id: str) -> dict[str, Any]:
    (pod,) = objects_of(cloud, reservation_id)["pods"]
    return pod


def test_a_profiling_reservation_holds_a_whole_node_that_nobody_shares(api, local_cloud):
    first = reserve(api, gpu_type="t4", gpu_count=1)["reservation_id"]
    wait_for_status(api, first, "active")
    profiling = reserve(api, "carol", gpu_type="t4", gpu_count=1, profiling=True)
    wait_for_status(api, profiling["reservation_id"], "active", profile="carol")
    pod = _pod(local_cloud, profiling["reservation_id"])
    assert pod["metadata"]["namespace"] == "gpu-dev-profiling"
    assert pod["status"]["phase"] == "Running"
    node = pod["spec"]["nodeName"]
    assert node != _pod(local_cloud, first)["spec"]["nodeName"]
    assert allocated_slots(local_cloud, profiling["reservation_id"]) == 4  # the whole t4 node

    # alice's next one-GPU reservation packs beside her first, never beside carol's
    second = reserve(api, gpu_type="t4", gpu_count=1)["reservation_id"]
    assert wait_for_status(api, second, "active")
    assert _pod(local_cloud, second)["spec"]["nodeName"] != node
    # four GPUs: the other node has two left, carol's node is hers alone: it waits
    waiting = reserve(api, "bob", gpu_type="t4", gpu_count=4)["reservation_id"]
    _queued_first(api, waiting, "bob")
    assert allocated_slots(local_cloud, waiting) == 0
    on_node = [
        p["metadata"]["labels"]["gpu-dev/reservation"]
        for namespace in ("gpu-dev", "gpu-dev-profiling")
        for p in local_cloud.kubernetes.store.list("pods", namespace)["items"]  # type: ignore[union-attr]
        if p["spec"].get("nodeName") == node
    ]
    assert on_node == [profiling["reservation_id"]]


@pytest.fixture
def profiling_node(local_cloud: LocalCloud) -> Iterator[str]:
    """One h100 node labelled and tainted for profiling, as an operator would; put back."""
    assert local_cloud.kubernetes is not None
    store = local_cloud.kubernetes.store
    (name, *_) = sorted(
        n["metadata"]["name"] for n in store.list("nodes", None, "GpuType=h100")["items"]
    )
    taint = {"key": PROFILING, "value": "true", "effect": "NoSchedule"}
    store.patch("nodes", "", name, {"metadata": {"labels": {PROFILING: "true"}}})
    store.patch("nodes", "", name, {"spec": {"taints": [taint]}})
    try:
        yield name
    finally:
        store.patch("nodes", "", name, {"metadata": {"labels": {PROFILING: None}}})
        store.patch("nodes", "", name, {"spec": {"taints": None}})


def test_a_labelled_node_takes_profiling_only(api, local_cloud, profiling_node):
    whole = reserve(api, gpu_type="h100", gpu_count=8)["reservation_id"]
    wait_for_status(api, whole, "active")
    assert _pod(local_cloud, whole)["spec"]["nodeName"] != profiling_node
    # the profiling node is free, yet an ordinary request waits for the other one
    one = reserve(api, "bob", gpu_type="h100", gpu_count=1)["reservation_id"]
    _queued_first(api, one, "bob")

    profiling = reserve(api, "carol", gpu_type="h100", gpu_count=1, profiling=True)
    wait_for_status(api, profiling["reservation_id"], "active", profile="carol")
    pod = _pod(local_cloud, profiling["reservation_id"])
    assert pod["spec"]["nodeName"] == profiling_node and pod["status"]["phase"] == "Running"
    assert pod["spec"]["nodeSelector"][PROFILING] == "true"
    assert {"key": PROFILING, "operator": "Equal", "value": "true"} in pod["spec"]["tolerations"]
    assert allocated_slots(local_cloud, profiling["reservation_id"]) == 8
    assert show(api, one, "bob")["status"] == "queued"
