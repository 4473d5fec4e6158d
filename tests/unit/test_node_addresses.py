"""A node's SSH address: its ExternalIP, else its ExternalDNS, else its internal IP (and the
reservation says which, so the CLI can tell the user an internal one needs the VPC)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudev.cluster.inventory import _node
from gpudev.cluster.names import Placement


def node(*addresses: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "i-0abc", "labels": {"GpuType": "t4"}},
        "status": {"addresses": [{"type": t, "address": a} for t, a in addresses]},
    }


INTERNAL = ("InternalIP", "10.0.3.4")
EXTERNAL_DNS = ("ExternalDNS", "ec2-54-1-2-3.us-east-2.compute.amazonaws.com")


@pytest.mark.parametrize(
    ("addresses", "expected"),
    [
        ([INTERNAL, ("ExternalIP", "54.1.2.3"), EXTERNAL_DNS], ("54.1.2.3", "external")),
        ([INTERNAL, EXTERNAL_DNS], (EXTERNAL_DNS[1], "external")),
        ([INTERNAL, ("InternalDNS", "ip-10-0-3-4.ec2.internal")], ("10.0.3.4", "internal")),
    ],
    ids=["external-ip", "external-dns-only", "private-subnet"],
)
def test_the_ssh_address_prefers_the_external_one(addresses, expected):
    seen = _node(node(*addresses))
    assert seen.internal_ip == "10.0.3.4"
    placement = Placement(0, seen.name, seen.internal_ip, 4, seen.external_address)
    assert placement.ssh_address == expected
    assert placement.node_ip == "10.0.3.4", "the pods' rendezvous keeps the internal address"
