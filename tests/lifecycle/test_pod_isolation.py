"""Isolated dev pods through the whole deployment: each reservation gets its own
NetworkPolicy (its pods, and only its pods, both ways), an ordinary reservation's pod runs in
gpu-dev without SYS_ADMIN (Pod Security baseline enforced there by the stand-in), a profiling
reservation's pod runs with SYS_ADMIN in gpu-dev-profiling, and tear down leaves nothing of
either, NetworkPolicy included."""

from __future__ import annotations

from typing import Any

from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    reserve,
    wait_for_status,
)

LABEL = "gpu-dev/reservation"


def _own_pods(rid: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {LABEL: rid}}}


def _assert_peers_policy(objects: dict[str, list[dict[str, Any]]], rid: str) -> None:
    [policy] = objects["networkpolicies"]
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"]["name"] == f"gpu-dev-{rid[:8]}-peers"
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {LABEL: rid}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [_own_pods(rid)]}]
    assert spec["egress"] == [{"to": [_own_pods(rid)]}]
    # the policy selects exactly the reservation's pods
    for pod in objects["pods"]:
        assert pod["metadata"]["labels"][LABEL] == rid
        assert pod["metadata"]["namespace"] == policy["metadata"]["namespace"]


def test_ordinary_profiling_and_multinode_reservations_are_isolated_and_torn_down(api, local_cloud):
    plain = reserve(api, gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    # carol's SSO role is the local cloud's profiling role (gpudev:profilingRoles)
    profiling = reserve(api, "carol", gpu_type="t4", gpu_count=1, hours=1, profiling=True)[
        "reservation_id"
    ]
    multinode = reserve(api, gpu_type="h100", gpu_count=16, hours=1)["reservation_id"]
    owners = ((plain, "alice"), (profiling, "carol"), (multinode, "alice"))
    for rid, owner in owners:
        wait_for_status(api, rid, "active", timeout=30, profile=owner)

    plain_objects = objects_of(local_cloud, plain)
    _assert_peers_policy(plain_objects, plain)
    [pod] = plain_objects["pods"]
    assert pod["metadata"]["namespace"] == "gpu-dev"
    container = pod["spec"]["containers"][0]
    assert "SYS_ADMIN" not in (container["securityContext"]["capabilities"].get("add") or [])
    assert "allowPrivilegeEscalation" not in container["securityContext"]  # dev's sudo
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["spec"]["automountServiceAccountToken"] is False

    profiling_objects = objects_of(local_cloud, profiling)
    _assert_peers_policy(profiling_objects, profiling)
    [pod] = profiling_objects["pods"]
    assert pod["metadata"]["namespace"] == "gpu-dev-profiling"
    assert pod["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN"]
    assert {o["metadata"]["namespace"] for kind in profiling_objects.values() for o in kind} == {
        "gpu-dev-profiling"
    }  # its services, ConfigMap and Secret live beside it
    assert api.call("GET", f"/v1/reservations/{profiling}", "carol").body["profiling"] is True

    multinode_objects = objects_of(local_cloud, multinode)
    _assert_peers_policy(multinode_objects, multinode)
    assert len(multinode_objects["pods"]) == 2

    for rid, owner in owners:
        cancel(api, rid, owner)
    for rid, owner in owners:
        wait_for_status(api, rid, "cancelled", timeout=30, profile=owner)
        assert_nothing_left(local_cloud, rid)
