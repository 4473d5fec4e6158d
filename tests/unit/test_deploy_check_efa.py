"""`make deploy-check`'s EFA check (tools/deploy_check.py `_efa_nodes`): nodes of an EFA
node group that advertise no EFA interface (no device plugin, or a launch template without
EFA) and placement groups spanning zones are named; no EFA group at all is fine."""

from __future__ import annotations

from kubernetes.client import V1Node, V1NodeStatus, V1ObjectMeta

from tools.deploy_check import _efa_nodes


def _node(name: str, zone: str = "us-east-2a", efa: str | None = "32") -> V1Node:
    labels = {"gpu-dev/placement-group": "gpudev-h100-efa", "topology.kubernetes.io/zone": zone}
    allocatable = {"vpc.amazonaws.com/efa": efa} if efa else {}
    return V1Node(
        metadata=V1ObjectMeta(name=name, labels=labels),
        status=V1NodeStatus(allocatable=allocatable),
    )


def test_efa_nodes_in_one_zone_pass():
    (finding,) = _efa_nodes([_node("a"), _node("b")])
    assert finding.ok and "2 nodes advertise" in finding.detail


def test_a_node_without_efa_names_the_device_plugin_manifest():
    (finding,) = _efa_nodes([_node("a"), _node("b", efa=None)])
    assert not finding.ok and "b" in finding.detail
    assert "efa-device-plugin.yaml" in finding.detail


def test_a_placement_group_across_zones_is_named():
    (finding,) = _efa_nodes([_node("a"), _node("b", zone="us-east-2b")])
    assert not finding.ok and "gpudev-h100-efa" in finding.detail


def test_no_efa_group_is_fine():
    (finding,) = _efa_nodes([])
    assert finding.ok and not finding.required
