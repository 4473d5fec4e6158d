"""NFS to the personal file system's mount targets (docs/shared-files.md, "Network"): the
EFS CSI driver mounts from the node's network (its node plugin runs with hostNetwork), so
the mount targets admit TCP 2049 from the cluster security group (cdk_app/shared_files.py)
and the pods themselves get no NFS at all: with every policy a dev pod is under (the
namespace's default-deny, dns, internet and ssh policies, and the reservation's own),
egress to a mount target on 2049 is denied, while the internet stays reachable. A pod
user (root in their container) can thus never talk NFS to the file system directly."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import yaml

from gpudev.cluster.network import network_policy
from gpudev.models import Reservation

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "deploy" / "kubernetes" / "network-policies.yaml"
# The cluster stack's VPC (10.0.0.0/16 by CDK's default): mount targets in its private subnets.
MOUNT_TARGETS = ("10.0.128.10", "10.0.160.10", "172.31.0.10", "192.168.1.10")


def _ip_allowed(peer: dict[str, Any], address: str) -> bool:
    block = peer.get("ipBlock")
    if block is None:
        return False  # a pod or namespace selector: never a mount target's address
    ip = ipaddress.ip_address(address)
    if ip not in ipaddress.ip_network(block["cidr"]):
        return False
    return not any(ip in ipaddress.ip_network(e) for e in block.get("except", []))


def _port_allowed(rule: dict[str, Any], port: int) -> bool:
    ports = rule.get("ports")
    if not ports:
        return True
    return any(
        p.get("protocol", "TCP") == "TCP"
        and p.get("port", port) <= port <= p.get("endPort", p.get("port", port))
        for p in ports
    )


def egress_allowed(policies: list[dict[str, Any]], namespace: str, address: str, port: int) -> bool:
    """NetworkPolicy's egress rule: allowed when any Egress policy of the namespace allows it
    (policies add up); a rule with no `to` allows every destination."""
    for policy in policies:
        if policy["metadata"].get("namespace", namespace) != namespace:
            continue
        if "Egress" not in policy["spec"].get("policyTypes", []):
            continue
        for rule in policy["spec"].get("egress") or []:
            peers = rule.get("to")
            if (peers is None or any(_ip_allowed(p, address) for p in peers)) and _port_allowed(
                rule, port
            ):
                return True
    return False


def _reservation_policy() -> dict[str, Any]:
    reservation = Reservation.model_construct(
        reservation_id=uuid4(), user_id="alice", total_nodes=2
    )
    return network_policy(reservation)


@pytest.mark.parametrize("namespace", ["gpu-dev", "gpu-dev-profiling", "gpu-dev-docker"])
@pytest.mark.parametrize("address", MOUNT_TARGETS)
def test_no_pod_reaches_a_mount_target_on_nfs(namespace: str, address: str):
    policies = [*yaml.safe_load_all(POLICIES.read_text()), _reservation_policy()]
    assert not egress_allowed(policies, namespace, address, 2049)


def test_the_evaluator_sees_what_the_policies_allow():
    """The same policies let the pod reach the internet (and so the check above is not
    vacuous)."""
    policies = [*yaml.safe_load_all(POLICIES.read_text()), _reservation_policy()]
    assert egress_allowed(policies, "gpu-dev", "203.0.113.7", 443)
    assert egress_allowed(policies, "gpu-dev", "203.0.113.7", 2049)  # NFS on the internet: not EFS
    allow_nfs = {
        "metadata": {"name": "x", "namespace": "gpu-dev"},
        "spec": {
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.128.0/19"}}], "ports": [{"port": 2049}]}],
        },
    }
    assert egress_allowed([*policies, allow_nfs], "gpu-dev", "10.0.128.10", 2049)
    assert not egress_allowed([*policies, allow_nfs], "gpu-dev", "10.0.160.10", 2049)
