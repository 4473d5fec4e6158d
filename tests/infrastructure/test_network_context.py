"""The documented network choices synthesize: the stack's own VPC (default), or the EKS
cluster's VPC by ids (no lookups), with or without database subnets and the cluster security
group's rule; a wrong or partial choice fails at synth with the context key in the message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from tests.support.certificates import synth_context

CLUSTER_VPC = {
    "gpudev:vpcId": "vpc-0abc",
    "gpudev:availabilityZones": ["us-east-2a", "us-east-2b"],
    "gpudev:functionSubnetIds": '["subnet-1", "subnet-2"]',  # as `-c key='[...]'` gives it
}


def _template(tmp_path: Path, extra: dict[str, Any]) -> Template:
    from cdk_app.app import build_app

    _, stack = build_app(outdir=str(tmp_path / "out"), context={**synth_context(tmp_path), **extra})
    return Template.from_stack(stack)


def _function_subnets(template: Template) -> set[str]:
    return {
        subnet
        for function in template.find_resources("AWS::Lambda::Function").values()
        for subnet in function["Properties"].get("VpcConfig", {}).get("SubnetIds", [])
    }


def test_the_cluster_vpc_by_ids_with_its_security_group_rule(tmp_path: Path):
    template = _template(
        tmp_path,
        {
            **CLUSTER_VPC,
            "gpudev:databaseSubnetIds": "subnet-3,subnet-4",
            "gpudev:clusterSecurityGroupId": "sg-0def",
        },
    )
    template.resource_count_is("AWS::EC2::VPC", 0)
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    assert _function_subnets(template) == {"subnet-1", "subnet-2"}
    template.has_resource_properties(
        "AWS::RDS::DBSubnetGroup", {"SubnetIds": ["subnet-3", "subnet-4"]}
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"GroupId": "sg-0def", "FromPort": 443, "ToPort": 443, "IpProtocol": "tcp"},
    )
    # the availability updater to the GPU nodes' DCGM exporters (docs/utilisation.md)
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"GroupId": "sg-0def", "FromPort": 9400, "ToPort": 9400, "IpProtocol": "tcp"},
    )


def test_without_database_subnets_the_database_shares_the_function_subnets(tmp_path: Path):
    template = _template(tmp_path, CLUSTER_VPC)
    template.has_resource_properties(
        "AWS::RDS::DBSubnetGroup", {"SubnetIds": ["subnet-1", "subnet-2"]}
    )
    template.resource_count_is("AWS::EC2::SecurityGroupIngress", 1)  # the database's port


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"gpudev:vpcId": "vpc-0abc"}, "gpudev:availabilityZones: two availability zones"),
        (
            {**CLUSTER_VPC, "gpudev:availabilityZones": ["us-east-2a"]},
            "gpudev:availabilityZones: two availability zones",
        ),
        ({**CLUSTER_VPC, "gpudev:functionSubnetIds": []}, "gpudev:functionSubnetIds: required"),
        (
            {**CLUSTER_VPC, "gpudev:functionSubnetIds": ["subnet-1"]},
            "one subnet per availability zone",
        ),
        ({**CLUSTER_VPC, "gpudev:vpcId": "vpc0abc"}, "gpudev:vpcId: a VPC id"),
        (
            {**CLUSTER_VPC, "gpudev:functionSubnetIds": ["sg-1", "subnet-2"]},
            "ids start with 'subnet-'",
        ),
        (
            {**CLUSTER_VPC, "gpudev:clusterSecurityGroupId": "eks-sg"},
            "gpudev:clusterSecurityGroupId: a security group id",
        ),
    ],
)
def test_a_wrong_network_choice_fails_at_synth_naming_the_key(
    tmp_path: Path, context: dict[str, Any], message: str
):
    with pytest.raises(ValueError, match=message):
        _template(tmp_path, context)
