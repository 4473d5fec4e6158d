"""The cluster stack's fabric (cdk_app/fabric.py): an EFA type's node group (h100,
p5.48xlarge) gets a launch template with its 32 EFA interfaces and a cluster placement
group, one subnet, and the placement-group label the allocator reads; a type without EFA
(t4) gets none of it; the cluster security group lets all traffic out to itself; the EFA
counts are the catalogue's (migration 0041)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from cdk_app.fabric import EFA_INTERFACES
from tests.infrastructure.test_cluster_stack import CONTEXT, _cluster_template, _node_groups

MIGRATION = Path(__file__).parents[2] / "migrations" / "0041_fabric.sql"


@pytest.fixture(scope="module")
def cluster() -> Template:
    return _cluster_template(CONTEXT)  # cdk-nag checked: a finding fails the synth


def _template_of(cluster: Template, group: dict[str, Any]) -> dict[str, Any]:
    templates = cluster.find_resources("AWS::EC2::LaunchTemplate")
    data: dict[str, Any] = templates[group["LaunchTemplate"]["Id"]["Ref"]]["Properties"][
        "LaunchTemplateData"
    ]
    return data


def test_an_efa_node_group_gets_every_efa_interface_a_placement_group_and_one_subnet(
    cluster: Template,
):
    groups = _node_groups(cluster)
    h100 = groups["pytorch-gpu-dev-gpu-nodes-h100"]
    data = _template_of(cluster, h100)
    interfaces = data["NetworkInterfaces"]
    assert [i["InterfaceType"] for i in interfaces] == ["interface"] + ["efa-only"] * 32
    assert [(i["NetworkCardIndex"], i["DeviceIndex"]) for i in interfaces[:3]] == [
        (0, 0),
        (0, 1),
        (1, 0),
    ]
    assert sorted({i["NetworkCardIndex"] for i in interfaces}) == list(range(32))
    assert all(
        i["Groups"] == [{"Fn::GetAtt": ["Cluster", "ClusterSecurityGroupId"]}] for i in interfaces
    )
    (placement_group,) = cluster.find_resources("AWS::EC2::PlacementGroup").items()
    assert placement_group[1]["Properties"] == {"Strategy": "cluster"}
    assert data["Placement"] == {"GroupName": {"Ref": placement_group[0]}}
    assert len(h100["Subnets"]) == 1  # one zone: EFA never crosses one
    assert h100["Labels"] == {"GpuType": "h100", "gpu-dev/placement-group": "gpudev-h100-efa"}


def test_a_node_group_without_efa_keeps_its_zones_and_a_plain_template(cluster: Template):
    t4 = _node_groups(cluster)["pytorch-gpu-dev-gpu-nodes-t4"]
    data = _template_of(cluster, t4)
    assert "NetworkInterfaces" not in data and "Placement" not in data
    assert len(t4["Subnets"]) > 1
    assert "gpu-dev/placement-group" not in t4["Labels"]


def test_the_cluster_security_group_lets_all_traffic_out_to_itself(cluster: Template):
    (rule,) = cluster.find_resources("AWS::EC2::SecurityGroupEgress").values()
    group = {"Fn::GetAtt": ["Cluster", "ClusterSecurityGroupId"]}
    assert rule["Properties"] | {"Description": ""} == {
        "GroupId": group,
        "IpProtocol": "-1",
        "DestinationSecurityGroupId": group,
        "Description": "",
    }


def test_no_efa_group_no_efa_rule():
    groups = '{"t4": {"min": 0, "max": 2}, "cpu-x86": {"min": 1, "max": 2}}'
    context = CONTEXT | {"gpudev:nodeGroups": groups}
    template = _cluster_template(context)
    assert template.find_resources("AWS::EC2::SecurityGroupEgress") == {}
    assert template.find_resources("AWS::EC2::PlacementGroup") == {}


def test_the_stacks_efa_counts_are_the_catalogues():
    found = re.findall(r"WHEN '([\w.-]+)' THEN (\d+)", MIGRATION.read_text())
    counts = {instance_type: int(count) for instance_type, count in found}
    assert counts == EFA_INTERFACES
