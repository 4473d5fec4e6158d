"""Jupyter's token never crosses the network in cleartext: nothing a reservation is made of
(its pods, Services, NetworkPolicy) nor the namespace's deployed policies opens Jupyter's
port; Jupyter listens on the pod's loopback (test_startup_sandbox.py) and is reached through
the owner's SSH connection (`gpu-dev connect --jupyter`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml  # type: ignore[import-untyped]

from gpudev.cluster import network
from gpudev.cluster.objects import JUPYTER_PORT
from tests.unit.test_manifest_drift import DEPLOYED, _catalogue, _manifests, _reservation

PORT_FIELDS = {"port", "containerPort", "targetPort", "nodePort", "endPort"}


def _ports(value: Any) -> Iterator[Any]:
    """Every port number or name anywhere in a manifest."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PORT_FIELDS:
                yield item
            yield from _ports(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ports(item)


def test_no_object_of_a_reservation_opens_jupyters_port():
    built = _manifests("alice")
    assert any(m["kind"] == "Service" for _, m in built)
    for name, manifest in built:
        ports = set(_ports(manifest))
        assert JUPYTER_PORT not in ports and "jupyter" not in ports, name


def test_the_only_node_port_of_a_reservation_is_ssh():
    service = network.ssh_service(_reservation("alice", _catalogue()[0], 1, 1))
    assert service["spec"]["type"] == "NodePort"
    assert [p["port"] for p in service["spec"]["ports"]] == [22]
    assert not hasattr(network, "jupyter_service")


def test_the_deployed_policies_let_in_ssh_only():
    with DEPLOYED.open() as file:
        policies = list(yaml.safe_load_all(file))
    assert policies
    for policy in policies:
        assert JUPYTER_PORT not in set(_ports(policy)), policy["metadata"]["name"]
    from_outside = [p for p in policies if p["metadata"]["name"] == "ssh-jupyter-from-outside"]
    assert len(from_outside) == 3  # gpu-dev, gpu-dev-profiling, gpu-dev-docker; old name kept
    for policy in from_outside:
        (rule,) = policy["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 22}]
