"""The optional cluster stack (cdk_app/cluster_stack.py): the cluster's access and endpoints,
the add-ons, node groups named as the availability updater counts them with the label and
taint the pods expect, the outputs the main stack takes as context, cdk-nag clean; and the
app adds it only when `gpudev:createCluster` asks for it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from cdk_app.cluster_stack import ClusterStack
from cdk_app.nag import acknowledge_cluster_findings
from cdk_app.node_groups import CATALOGUE
from gpudev.availability.compute import ScalingGroup, compute_availability
from tests.infrastructure.conftest import ROOT
from tests.support.templates import cfn_lint

ADMIN = "arn:aws:iam::123456789012:role/Admin"
CONTEXT: dict[str, Any] = {
    "gpudev:createCluster": "true",
    "gpudev:clusterAdminRoleArns": ADMIN,
    "gpudev:nodeGroups": json.dumps(
        {
            "t4": {"min": 0, "max": 2},
            "h100": {"min": 0, "max": 4, "desired": 1},
            "cpu-arm": {"min": 1, "max": 3},
        }
    ),
    "gpudev:nodePortCidrs": ["203.0.113.0/24", "2001:db8::/32"],
}


def _cluster_template(context: dict[str, Any], outdir: Path | None = None) -> Template:
    """The cluster stack alone, nag-checked (a finding fails synth): no layer to bundle."""
    app = cdk.App(context=context, outdir=str(outdir) if outdir else None)
    stack = ClusterStack(app, "GpuDevCluster")
    acknowledge_cluster_findings(stack)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def cluster() -> Template:
    return _cluster_template(CONTEXT)


def _node_groups(template: Template) -> dict[str, dict[str, Any]]:
    return {
        group["Properties"]["NodegroupName"]: group["Properties"]
        for group in template.find_resources("AWS::EKS::Nodegroup").values()
    }


def test_the_cluster_has_access_entries_a_private_endpoint_only_and_an_admin(cluster: Template):
    """By default nothing outside the VPC reaches the API server: the nodes and the main
    stack's functions (deployed into this VPC) use the private endpoint, which resolves
    inside the VPC only with its DNS support and hostnames on."""
    cluster.has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "Name": "pytorch-gpu-dev-cluster",
            "AccessConfig": {
                "AuthenticationMode": "API_AND_CONFIG_MAP",
                "BootstrapClusterCreatorAdminPermissions": False,
            },
            "ResourcesVpcConfig": Match.object_like(
                {
                    "EndpointPublicAccess": False,
                    "EndpointPrivateAccess": True,
                    "PublicAccessCidrs": Match.absent(),
                }
            ),
        },
    )
    cluster.has_resource_properties(
        "AWS::EC2::VPC", {"EnableDnsHostnames": True, "EnableDnsSupport": True}
    )
    cluster.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "PrincipalArn": ADMIN,
            "ClusterName": {"Ref": "Cluster"},
            "AccessPolicies": [
                Match.object_like(
                    {
                        "AccessScope": {"Type": "cluster"},
                        "PolicyArn": Match.any_value(),
                    }
                )
            ],
        },
    )


def test_the_public_endpoint_answers_the_listed_networks_only():
    """cdk-nag runs here too: its EKS1 finding is acknowledged only on this cluster, for
    the listed networks (the default template above passes it without one)."""
    context = {**CONTEXT, "gpudev:clusterEndpointPublicCidrs": "198.51.100.0/24,203.0.113.7"}
    template = _cluster_template(context)
    ((_, cluster),) = template.find_resources("AWS::EKS::Cluster").items()
    config = cluster["Properties"]["ResourcesVpcConfig"]
    assert (config["EndpointPublicAccess"], config["EndpointPrivateAccess"]) == (True, True)
    assert config["PublicAccessCidrs"] == ["198.51.100.0/24", "203.0.113.7/32"]


def test_every_function_that_calls_the_api_server_runs_in_the_vpc(template: Template):
    """What the private-only default relies on: in the cluster's VPC (`gpudev:vpcId`, from
    `MainStackContext`) these functions reach the private endpoint; outside any VPC they
    could not."""
    functions = template.find_resources("AWS::Lambda::Function").values()
    callers = [
        f["Properties"]
        for f in functions
        if "EKS_CLUSTER_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert len(callers) == 4  # reservation tasks, allocator, availability updater, sweeper
    assert all(caller["VpcConfig"]["SubnetIds"] for caller in callers)


def test_the_add_ons_network_policy_and_the_ebs_driver_identity(cluster: Template):
    cluster.has_resource_properties(
        "AWS::EKS::Addon",
        {"AddonName": "vpc-cni", "ConfigurationValues": '{"enableNetworkPolicy": "true"}'},
    )
    cluster.has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "aws-ebs-csi-driver",
            "PodIdentityAssociations": [
                {"ServiceAccount": "ebs-csi-controller-sa", "RoleArn": Match.any_value()}
            ],
        },
    )
    cluster.has_resource_properties("AWS::EKS::Addon", {"AddonName": "eks-pod-identity-agent"})
    (addon,) = cluster.find_resources(
        "AWS::EKS::Addon", {"Properties": {"AddonName": "aws-ebs-csi-driver"}}
    ).values()
    assert {"PodIdentityAgent", "NodeGroupcpuarm"} <= set(addon["DependsOn"])
    role_name = addon["Properties"]["PodIdentityAssociations"][0]["RoleArn"]["Fn::GetAtt"][0]
    trust = cluster.find_resources("AWS::IAM::Role")[role_name]["Properties"]
    statements = trust["AssumeRolePolicyDocument"]["Statement"]
    assert {s["Principal"]["Service"] for s in statements} == {"pods.eks.amazonaws.com"}
    assert {s["Action"] for s in statements} == {"sts:AssumeRole", "sts:TagSession"}


def test_the_cni_policy_goes_to_aws_node_through_pod_identity_not_to_the_node_role(
    cluster: Template,
):
    (addon,) = cluster.find_resources(
        "AWS::EKS::Addon", {"Properties": {"AddonName": "vpc-cni"}}
    ).values()
    (association,) = addon["Properties"]["PodIdentityAssociations"]
    assert association["ServiceAccount"] == "aws-node"
    assert "PodIdentityAgent" in addon["DependsOn"]
    roles = cluster.find_resources("AWS::IAM::Role")
    cni_role = roles[association["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    statements = cni_role["AssumeRolePolicyDocument"]["Statement"]
    assert {s["Principal"]["Service"] for s in statements} == {"pods.eks.amazonaws.com"}
    assert {s["Action"] for s in statements} == {"sts:AssumeRole", "sts:TagSession"}
    assert _managed_policies(cni_role) == {"AmazonEKS_CNI_Policy"}
    (node_role,) = [
        role["Properties"]
        for role in roles.values()
        if role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get(
            "Service"
        )
        == "ec2.amazonaws.com"
    ]
    assert _managed_policies(node_role) == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEC2ContainerRegistryPullOnly",
    }


def _managed_policies(role: dict[str, Any]) -> set[str]:
    """The AWS managed policies' names of a role's properties."""
    return {
        "".join(str(part) for part in arn["Fn::Join"][1]).rsplit("/", 1)[-1]
        for arn in role.get("ManagedPolicyArns", [])
    }


def test_every_node_group_has_a_launch_template_with_imdsv2_and_hop_limit_one(
    cluster: Template,
):
    """A pod is one hop behind its node: with hop limit 1 its token request never comes back,
    so no pod reaches the node role's credentials, whatever the network policies do."""
    templates = cluster.find_resources("AWS::EC2::LaunchTemplate")
    groups = _node_groups(cluster)
    assert len(templates) == len(groups) == 3
    for name, group in groups.items():
        assert "DiskSize" not in group, name  # a launch template carries the disk instead
        spec = group["LaunchTemplate"]
        template = templates[spec["Id"]["Ref"]]["Properties"]["LaunchTemplateData"]
        assert spec["Version"] == {"Fn::GetAtt": [spec["Id"]["Ref"], "LatestVersionNumber"]}
        assert template["MetadataOptions"] == {
            "HttpEndpoint": "enabled",
            "HttpTokens": "required",
            "HttpPutResponseHopLimit": 1,
        }
        assert "ImageId" not in template and "UserData" not in template, "EKS's AMI and bootstrap"


def test_node_disks_hold_every_pods_workspace_and_writes_at_their_limits(cluster: Template):
    """Filling /workspace evicts that pod alone: the pods a node can hold never promise more
    than its disk (gpudev/cluster/workspace.py), which the cluster stack sizes from them."""
    from gpudev.cluster.workspace import SYSTEM_GIB, ephemeral_storage_gib, workspace_gib

    templates = cluster.find_resources("AWS::EC2::LaunchTemplate")
    sizes = {}
    for name, group in _node_groups(cluster).items():
        data = templates[group["LaunchTemplate"]["Id"]["Ref"]]["Properties"]["LaunchTemplateData"]
        (device,) = data["BlockDeviceMappings"]
        assert device["DeviceName"] == "/dev/xvda"
        assert device["Ebs"] | {"VolumeSize": 0} == {
            "VolumeSize": 0,
            "VolumeType": "gp3",
            "Encrypted": True,
            "DeleteOnTermination": True,
        }
        sizes[name] = device["Ebs"]["VolumeSize"]
    # h100: 8 GPUs, the pods of 8 one-GPU reservations or of one 8-GPU one
    h100 = sizes["pytorch-gpu-dev-gpu-nodes-h100"]
    assert h100 == 1060
    assert h100 - SYSTEM_GIB >= 8 * ephemeral_storage_gib(1) >= ephemeral_storage_gib(8)
    assert sizes["pytorch-gpu-dev-gpu-nodes-t4"] - SYSTEM_GIB >= 4 * ephemeral_storage_gib(1)
    assert sizes["pytorch-gpu-dev-cpu-nodes-cpu-arm"] - SYSTEM_GIB >= 16 * ephemeral_storage_gib(0)
    assert workspace_gib(8) == 800 and workspace_gib(1) == 100 and workspace_gib(0) == 10


def test_node_groups_are_named_labelled_and_tainted_as_gpu_dev_expects(cluster: Template):
    groups = _node_groups(cluster)
    assert set(groups) == {
        "pytorch-gpu-dev-gpu-nodes-t4",
        "pytorch-gpu-dev-gpu-nodes-h100",
        "pytorch-gpu-dev-cpu-nodes-cpu-arm",
    }
    t4, h100 = groups["pytorch-gpu-dev-gpu-nodes-t4"], groups["pytorch-gpu-dev-gpu-nodes-h100"]
    arm = groups["pytorch-gpu-dev-cpu-nodes-cpu-arm"]
    assert (t4["InstanceTypes"], t4["AmiType"]) == (["g4dn.12xlarge"], "AL2023_x86_64_NVIDIA")
    assert t4["ScalingConfig"] == {"MinSize": 0, "MaxSize": 2, "DesiredSize": 0}
    assert h100["ScalingConfig"] == {"MinSize": 0, "MaxSize": 4, "DesiredSize": 1}
    assert (arm["InstanceTypes"], arm["AmiType"]) == (["c7g.8xlarge"], "AL2023_ARM_64_STANDARD")
    assert t4["Labels"] == {"GpuType": "t4"} and arm["Labels"] == {"GpuType": "cpu-arm"}
    # GPU pods tolerate this taint (gpudev/cluster/objects.py); CPU nodes run everything else
    assert t4["Taints"] == [{"Key": "nvidia.com/gpu", "Effect": "NO_SCHEDULE"}]
    assert "Taints" not in arm
    # public subnets: users reach a pod's NodePort at its node's public address
    assert all(subnet["Ref"].startswith("Networkpublic") for subnet in t4["Subnets"])


def test_the_updater_counts_each_node_group_for_its_own_type(cluster: Template):
    """EKS tags each group's Auto Scaling group with the node group's name; the updater's
    rules (compute.py) give each name to exactly the type it was made for."""
    from gpudev.availability.compute import GpuTypeConfig

    types = [GpuTypeConfig(t, entry.gpus_per_node) for t, entry in CATALOGUE.items()]
    groups = [ScalingGroup(name, 1, 1) for name in _node_groups(cluster)]
    found = {a.gpu_type for a in compute_availability(types, groups, None, None) if a.groups_found}
    assert found == {"t4", "h100", "cpu-arm"}


def test_node_ports_open_to_the_given_networks_only(cluster: Template):
    cluster.resource_count_is("AWS::EC2::SecurityGroupIngress", 2)
    for cidr in ({"CidrIp": "203.0.113.0/24"}, {"CidrIpv6": "2001:db8::/32"}):
        cluster.has_resource_properties(
            "AWS::EC2::SecurityGroupIngress",
            {
                **cidr,
                "GroupId": {"Fn::GetAtt": ["Cluster", "ClusterSecurityGroupId"]},
                "FromPort": 30000,
                "ToPort": 32767,
                "IpProtocol": "tcp",
            },
        )


def test_outputs_are_the_main_stacks_network_context(cluster: Template):
    outputs = cluster.find_outputs("*")
    assert {
        "ClusterName",
        "VpcId",
        "AvailabilityZones",
        "FunctionSubnetIds",
        "DatabaseSubnetIds",
        "ClusterSecurityGroupId",
        "MainStackContext",
    } <= set(outputs)
    assert outputs["ClusterSecurityGroupId"]["Value"] == {
        "Fn::GetAtt": ["Cluster", "ClusterSecurityGroupId"]
    }
    joined = json.dumps(outputs["MainStackContext"]["Value"])
    for key in (
        "gpudev:vpcId",
        "gpudev:availabilityZones",
        "gpudev:functionSubnetIds",
        "gpudev:databaseSubnetIds",
        "gpudev:clusterSecurityGroupId",
    ):
        assert f"-c {key}=" in joined


def test_the_catalogue_matches_the_gpu_type_migration():
    sql = (ROOT / "migrations" / "0002_gpu_type_catalogue.sql").read_text()
    rows = re.findall(r"\('([\w-]+)',\s*'([\w.-]+)',\s*\d+,\s*\d+,\s*\d+,\s*(\d+),", sql)
    assert {t: (i, int(n)) for t, i, n in rows} == {
        t: (e.instance_type, e.gpus_per_node) for t, e in CATALOGUE.items()
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"gpudev:clusterAdminRoleArns": None}, "clusterAdminRoleArns: at least one"),
        ({"gpudev:clusterAdminRoleArns": "Admin"}, "clusterAdminRoleArns: IAM role ARNs"),
        ({"gpudev:nodeGroups": '{"v100": {"min": 0, "max": 1}}'}, "v100: not in the GPU"),
        ({"gpudev:nodeGroups": '{"t4": {"min": 2, "max": 1}}'}, "t4: needs 0 <= min"),
        ({"gpudev:nodeGroups": '{"t4": {"min": 0, "max": "2"}}'}, "t4: min, max"),
        ({"gpudev:nodeGroups": '{"t4": {"min": 0, "max": 2}}'}, "needs a CPU group"),
        ({"gpudev:nodeGroups": "{t4}"}, "gpudev:nodeGroups: not JSON"),
        ({"gpudev:nodePortCidrs": "198.51.100.7"}, None),  # one address (a /32): accepted
        ({"gpudev:nodePortCidrs": "10.0.0.0/33"}, "nodePortCidrs: '10.0.0.0/33' is not"),
        (
            {"gpudev:clusterEndpointPublicCidrs": '["198.51.100.0/24", "198.51.100.300/32"]'},
            "clusterEndpointPublicCidrs: '198.51.100.300/32' is not a CIDR",
        ),
        (
            {"gpudev:clusterEndpointPublicCidrs": "198.51.100.1/24"},
            "clusterEndpointPublicCidrs: '198.51.100.1/24' is not a CIDR .*host bits set",
        ),
        (
            {"gpudev:clusterEndpointPublicCidrs": "2001:db8::/32"},
            "clusterEndpointPublicCidrs: 2001:db8::/32 is IPv6",
        ),
        (
            {"gpudev:clusterEndpointPublicCidrs": ["0.0.0.0/0"]},
            "clusterEndpointPublicCidrs: 0.0.0.0/0 is the whole internet",
        ),
    ],
)
def test_a_wrong_cluster_choice_fails_at_synth_naming_the_key(
    extra: dict[str, Any], message: str | None
):
    context = {key: value for key, value in {**CONTEXT, **extra}.items() if value is not None}
    if message is None:
        _cluster_template(context)
        return
    with pytest.raises(ValueError, match=message):
        _cluster_template(context)


def test_the_app_has_the_cluster_stack_only_when_asked(
    synthesized: tuple[object, Path], tmp_path: Path
):
    _, outdir = synthesized  # the default context: the main stack alone
    manifest = json.loads((outdir / "manifest.json").read_text())
    artifacts = manifest["artifacts"].items()
    stacks = {name for name, a in artifacts if a["type"] == "aws:cloudformation:stack"}
    assert stacks == {"GpuDev"}

    from cdk_app.app import build_app
    from tests.support.certificates import synth_context

    app, main = build_app(
        outdir=str(tmp_path / "out"), context={**synth_context(tmp_path), **CONTEXT}
    )
    cluster = app.node.find_child("GpuDevCluster")
    assert isinstance(cluster, ClusterStack)
    assert main.dependencies == [cluster]  # `cdk deploy` makes the cluster first
    app.synth()  # both stacks, cdk-nag over the whole app
    # without gpudev:vpcId the functions could not reach the private endpoint: said at synth
    Annotations.from_stack(main).has_warning(
        "/GpuDev",
        Match.string_like_regexp(
            "gpudev:vpcId and gpudev:clusterSecurityGroupId not set.*MainStackContext"
        ),
    )
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["artifacts"]["GpuDev"]["dependencies"][0] == "GpuDevCluster"
    with pytest.raises(ValueError, match="gpudev:createCluster: true or false"):
        build_app(outdir=str(tmp_path / "out2"), context={"gpudev:createCluster": "yes"})


def test_node_ports_open_to_the_world_are_refused_by_cdk_nag():
    with pytest.raises(RuntimeError, match="AwsSolutions-EC23"):
        _cluster_template({**CONTEXT, "gpudev:nodePortCidrs": "0.0.0.0/0"})


def test_cfn_lint_accepts_the_cluster_template(tmp_path: Path):
    _cluster_template(CONTEXT, tmp_path)
    result = cfn_lint(tmp_path / "GpuDevCluster.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_by_default_a_t4_group_scaled_to_zero_and_one_cpu_node():
    context = {k: v for k, v in CONTEXT.items() if k != "gpudev:nodeGroups"}
    groups = _node_groups(_cluster_template(context))
    assert {name: g["ScalingConfig"] for name, g in groups.items()} == {
        "pytorch-gpu-dev-gpu-nodes-t4": {"MinSize": 0, "MaxSize": 2, "DesiredSize": 0},
        "pytorch-gpu-dev-cpu-nodes-cpu-x86": {"MinSize": 1, "MaxSize": 2, "DesiredSize": 1},
    }


@pytest.mark.parametrize(
    ("context", "missing"),
    [
        ({}, "gpudev:vpcId and gpudev:clusterSecurityGroupId not set"),
        # in the cluster's VPC, but its security group admits only its own members
        ({"gpudev:vpcId": "vpc-0abc"}, "gpudev:clusterSecurityGroupId not set"),
        ({"gpudev:vpcId": "vpc-0abc", "gpudev:clusterSecurityGroupId": "sg-0def"}, None),
    ],
)
def test_functions_that_cannot_reach_the_private_endpoint_are_said_at_synth(
    context: dict[str, str], missing: str | None
):
    from cdk_app.app import cluster_endpoint_out_of_reach

    said = cluster_endpoint_out_of_reach(cdk.App(context=context))
    if missing is None:
        assert said is None
    else:
        assert said is not None and said.startswith(missing + ":")
        assert "MainStackContext" in said
