"""The availability updater finds capacity in groups named by convention and in EKS managed
node groups, whose Auto Scaling groups EKS names `eks-<node group>-<uuid>` and tags with
`eks:nodegroup-name` (the cluster stack's node groups, cdk_app/cluster_stack.py), against
moto's Auto Scaling: both count, another team's groups do not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpudev.availability.compute import GpuTypeConfig, compute_availability
from gpudev.availability.service import list_scaling_groups

REGION = "us-east-2"


@pytest.fixture
def autoscaling() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("autoscaling", region_name=REGION)
        client.create_launch_configuration(
            LaunchConfigurationName="nodes", ImageId="ami-12c6146b", InstanceType="g4dn.12xlarge"
        )
        yield client


def _group(autoscaling: Any, name: str, size: int, node_group: str | None = None) -> None:
    tags = (
        [
            {"Key": "eks:cluster-name", "Value": "pytorch-gpu-dev-cluster"},
            {"Key": "eks:nodegroup-name", "Value": node_group},
        ]
        if node_group
        else []
    )
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchConfigurationName="nodes",
        MinSize=0,
        MaxSize=4,
        DesiredCapacity=size,
        AvailabilityZones=[f"{REGION}a"],
        Tags=[{**tag, "ResourceId": name, "ResourceType": "auto-scaling-group"} for tag in tags],
    )


def test_managed_node_groups_count_by_their_node_group_name(autoscaling):
    _group(
        autoscaling,
        "eks-pytorch-gpu-dev-gpu-nodes-t4-7ec9a1b2-0d4e-4c55-9d7a-1f0e2b3c4d5e",
        2,
        node_group="pytorch-gpu-dev-gpu-nodes-t4",
    )
    _group(autoscaling, "pytorch-gpu-dev-cpu-nodes-cpu-x86", 1)  # named by convention
    _group(autoscaling, "eks-inference-ng-0a1b2c3d", 3, node_group="inference-ng")
    _group(autoscaling, "web-servers", 2)

    groups = list_scaling_groups(autoscaling)

    assert sorted((g.name, g.desired_capacity, g.in_service) for g in groups) == [
        ("pytorch-gpu-dev-cpu-nodes-cpu-x86", 1, 1),
        ("pytorch-gpu-dev-gpu-nodes-t4", 2, 2),
    ]
    types = [GpuTypeConfig("t4", 4), GpuTypeConfig("t4-small", 1), GpuTypeConfig("cpu-x86", 0)]
    by_type = {a.gpu_type: a for a in compute_availability(types, groups, None, None)}
    assert (by_type["t4"].groups_found, by_type["t4"].total_cluster_gpus) == (True, 8)
    assert not by_type["t4-small"].groups_found  # `…-t4` does not count for `…-t4-small`
    assert (by_type["cpu-x86"].groups_found, by_type["cpu-x86"].running_instances) == (True, 1)


def test_a_node_group_tag_of_another_team_is_not_counted(autoscaling):
    _group(autoscaling, "eks-gpu-nodes-t4-0a1b2c3d", 2, node_group="gpu-nodes-t4")
    assert list_scaling_groups(autoscaling) == []
