"""`make deploy-check` on the account side, against moto: an empty account lists every
missing prerequisite; a prepared one passes; a network choice that does not match the
cluster is caught. moto's EKS does not return `accessConfig`, so that one field is added at
the boundary where a case needs it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud.aws import sso_trust_policy
from tools.deploy_check import Context, Finding, check_aws, report

REGION = "us-east-2"
SSO_PATH = "/aws-reserved/sso.amazonaws.com/"
ALLOWED = Context(
    {"gpudev:allowedRoles": ["aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"]}
)


@pytest.fixture
def aws() -> Iterator[Callable[[str], Any]]:
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        yield session.client


class AccessEntries:
    """moto's EKS client, with the authentication mode the real DescribeCluster returns."""

    def __init__(self, eks: Any, mode: str):
        self._eks, self._mode = eks, mode
        self.exceptions = eks.exceptions

    def describe_cluster(self, name: str) -> dict[str, Any]:
        answer = self._eks.describe_cluster(name=name)
        answer["cluster"]["accessConfig"] = {"authenticationMode": self._mode}
        return answer


def _with_access_entries(aws: Callable[[str], Any], mode: str) -> Callable[[str], Any]:
    eks = AccessEntries(aws("eks"), mode)
    return lambda service: eks if service == "eks" else aws(service)


def _prepare(aws: Callable[[str], Any], *, public: bool = True) -> dict[str, str]:
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for zone, cidr in (("us-east-2a", "10.0.1.0/24"), ("us-east-2b", "10.0.2.0/24"))
    }
    aws("ssm").put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="27", Type="String")
    aws("iam").create_role(
        RoleName="AWSReservedSSO_GpuDevUsers_0123456789abcdef",
        Path=SSO_PATH,
        AssumeRolePolicyDocument=sso_trust_policy("123456789012"),
    )
    aws("eks").create_cluster(
        name="pytorch-gpu-dev-cluster",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={
            "subnetIds": list(subnets.values()),
            "endpointPublicAccess": public,
            "endpointPrivateAccess": True,
        },
    )
    aws("autoscaling").create_launch_configuration(
        LaunchConfigurationName="gpu", ImageId="ami-12c6146b", InstanceType="p5.48xlarge"
    )
    aws("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="pytorch-gpu-dev-gpu-nodes-h100",
        LaunchConfigurationName="gpu",
        MinSize=0,
        MaxSize=2,
        VPCZoneIdentifier=subnets["us-east-2a"],
    )
    return {"vpc": vpc, **subnets}


def _by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {finding.check: finding for finding in findings}


def test_an_empty_account_says_what_is_missing(aws, capsys):
    findings = list(check_aws(aws, Context({})))
    checks = _by_check(findings)
    assert checks["credentials"].ok
    assert not checks["cdk bootstrap"].ok and "cdk bootstrap" in checks["cdk bootstrap"].detail
    assert not checks["EKS cluster"].ok and "eksClusterName" in checks["EKS cluster"].detail
    assert (
        not checks["allowed roles"].ok and "claim that username" in checks["allowed roles"].detail
    )
    assert report(findings) == 1
    assert "3 required prerequisite(s) missing" in capsys.readouterr().out


def test_a_prepared_account_is_ready(aws, capsys):
    _prepare(aws)
    findings = list(check_aws(_with_access_entries(aws, "API_AND_CONFIG_MAP"), ALLOWED))
    assert all(f.ok for f in findings), [f for f in findings if not f.ok]
    assert (
        "session names set by an identity provider" in _by_check(findings)["allowed roles"].detail
    )
    assert "pytorch-gpu-dev-gpu-nodes-h100" in _by_check(findings)["node groups"].detail
    assert report(findings) == 0 and "ready to deploy" in capsys.readouterr().out


def _trusting(aws: Callable[[str], Any], name: str, statement: dict[str, Any]) -> None:
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]}
    aws("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(document))


GITHUB_OIDC = "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"


@pytest.mark.parametrize(
    "statement",
    [
        {"Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "sts:AssumeRole"},
        # a web-identity caller passes RoleSessionName itself
        {"Principal": {"Federated": GITHUB_OIDC}, "Action": "sts:AssumeRoleWithWebIdentity"},
        {"Principal": {"AWS": "*"}, "NotAction": "sts:AssumeRoleWithSAML"},
    ],
    ids=["assume-role", "web-identity", "not-action"],
)
def test_an_allowed_role_whose_callers_name_their_sessions_fails(aws, statement):
    """Its sessions name themselves: anyone the trust policy admits could claim any username."""
    _prepare(aws)
    _trusting(aws, "GpuDevUsers", statement)
    context = Context({"gpudev:allowedRoles": ["GpuDevUsers", "Missing*"]})
    findings = [f for f in check_aws(aws, context) if f.check == "allowed roles"]
    refused, missing = findings
    assert not refused.ok and refused.required
    assert "GpuDevUsers: " in refused.detail and "choose the session name" in refused.detail
    assert not missing.ok and not missing.required and "no role matches yet" in missing.detail


def test_a_web_identity_role_that_pins_the_session_name_passes(aws):
    _prepare(aws)
    _trusting(
        aws,
        "GpuDevUsers",
        {
            "Principal": {"Federated": GITHUB_OIDC},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    "sts:RoleSessionName": "${token.actions.githubusercontent.com:actor}"
                }
            },
        },
    )
    (finding,) = [
        f
        for f in check_aws(aws, Context({"gpudev:allowedRoles": ["GpuDevUsers"]}))
        if f.check == "allowed roles"
    ]
    assert finding.ok, finding.detail


def test_a_cluster_without_access_entries_and_no_groups_fails(aws):
    _prepare(aws)
    aws("autoscaling").delete_auto_scaling_group(
        AutoScalingGroupName="pytorch-gpu-dev-gpu-nodes-h100", ForceDelete=True
    )
    checks = _by_check(list(check_aws(_with_access_entries(aws, "CONFIG_MAP"), Context({}))))
    access = checks["access entries"]
    assert not access.ok and "API_AND_CONFIG_MAP" in access.detail
    assert not checks["node groups"].ok


def test_a_private_endpoint_needs_the_clusters_vpc(aws):
    ids = _prepare(aws, public=False)
    entries = _with_access_entries(aws, "API")
    checks = _by_check(list(check_aws(entries, Context({}))))
    assert not checks["EKS endpoint reachable"].ok
    assert "gpudev:vpcId" in checks["EKS endpoint reachable"].detail

    chosen = Context(
        {
            "gpudev:vpcId": ids["vpc"],
            "gpudev:availabilityZones": ["us-east-2a", "us-east-2b"],
            "gpudev:functionSubnetIds": f"{ids['us-east-2a']},{ids['us-east-2b']}",
        }
    )
    checks = _by_check(list(check_aws(entries, chosen)))
    assert checks["VPC choice"].ok, checks["VPC choice"]


def test_subnets_outside_the_chosen_vpc_or_zones_are_named(aws):
    ids = _prepare(aws)
    other = aws("ec2").create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    stray = aws("ec2").create_subnet(
        VpcId=other, CidrBlock="10.9.1.0/24", AvailabilityZone="us-east-2c"
    )["Subnet"]["SubnetId"]
    chosen = Context(
        {
            "gpudev:vpcId": ids["vpc"],
            "gpudev:availabilityZones": ["us-east-2a", "us-east-2b"],
            "gpudev:functionSubnetIds": [ids["us-east-2a"], stray],
        }
    )
    finding = _by_check(list(check_aws(_with_access_entries(aws, "API"), chosen)))["VPC choice"]
    assert not finding.ok
    assert f"{stray} not in {ids['vpc']}" in finding.detail
    assert "outside gpudev:availabilityZones" in finding.detail


def test_an_eks_managed_node_group_counts_as_a_node_group(aws):
    _prepare(aws)
    aws("autoscaling").delete_auto_scaling_group(
        AutoScalingGroupName="pytorch-gpu-dev-gpu-nodes-h100", ForceDelete=True
    )
    name = "eks-pytorch-gpu-dev-gpu-nodes-t4-7ec9a1b2"  # how EKS names a node group's group
    aws("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchConfigurationName="gpu",
        MinSize=0,
        MaxSize=2,
        AvailabilityZones=["us-east-2a"],
        Tags=[
            {
                "Key": "eks:nodegroup-name",
                "Value": "pytorch-gpu-dev-gpu-nodes-t4",
                "ResourceId": name,
                "ResourceType": "auto-scaling-group",
            }
        ],
    )
    checks = _by_check(list(check_aws(_with_access_entries(aws, "API"), Context({}))))
    assert checks["node groups"].ok
    assert checks["node groups"].detail == "pytorch-gpu-dev-gpu-nodes-t4"


class ClusterSecurityGroup:
    """moto's EKS client, with the cluster security group the real DescribeCluster returns
    (moto's has none)."""

    def __init__(self, eks: Any, group_id: str):
        self._eks, self._group_id = eks, group_id
        self.exceptions = eks.exceptions

    def describe_cluster(self, name: str) -> dict[str, Any]:
        answer = self._eks.describe_cluster(name=name)
        answer["cluster"]["resourcesVpcConfig"]["clusterSecurityGroupId"] = self._group_id
        answer["cluster"]["accessConfig"] = {"authenticationMode": "API_AND_CONFIG_MAP"}
        return answer


def test_the_efa_security_group_rule_is_checked_both_ways(aws):
    created = _prepare(aws)
    ec2 = aws("ec2")
    group = ec2.create_security_group(
        GroupName="eks-cluster-sg", Description="cluster", VpcId=created["vpc"]
    )["GroupId"]
    itself = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=itself)  # EKS's own
    eks = ClusterSecurityGroup(aws("eks"), group)
    clients = lambda service: eks if service == "eks" else aws(service)  # noqa: E731

    checks = _by_check(list(check_aws(clients, ALLOWED)))
    assert not checks["EFA security group"].ok and not checks["EFA security group"].required
    assert "out to itself" in checks["EFA security group"].detail

    ec2.authorize_security_group_egress(GroupId=group, IpPermissions=itself)  # the stack's
    checks = _by_check(list(check_aws(clients, ALLOWED)))
    assert checks["EFA security group"].ok
