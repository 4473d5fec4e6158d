"""The personal network file system in the cluster stack (cdk_app/shared_files.py): EFS
encrypted with its own rotated key, IA after 30 days, a mount target per zone admitting NFS
from the cluster's nodes only, the file system policy (TLS, IAM, access points only), the
EFS CSI add-on with its pod-identity role, the lifecycle's tag-scoped grant to make access
points, and the main stack's context naming the file system; cdk-nag clean (the synth
fails on a finding)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from cdk_app.declaration import ACCESS_POINT_USER_TAG, SHARED_FILE_SYSTEM_ID
from gpudev.shared_files.access_points import USER_TAG
from tests.infrastructure.test_cluster_stack import CONTEXT, _cluster_template


@pytest.fixture(scope="module")
def cluster() -> Template:
    return _cluster_template(CONTEXT)


def _one(template: Template, kind: str) -> dict[str, Any]:
    [resource] = template.find_resources(kind).values()
    return dict(resource["Properties"])


def test_the_file_system_is_encrypted_with_a_rotated_key_and_moves_to_ia_after_30_days(
    cluster: Template,
):
    file_system = _one(cluster, "AWS::EFS::FileSystem")
    assert file_system["Encrypted"] is True
    assert "Fn::GetAtt" in file_system["KmsKeyId"]
    assert file_system["LifecyclePolicies"] == [{"TransitionToIA": "AFTER_30_DAYS"}]
    cluster.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    [resource] = cluster.find_resources("AWS::EFS::FileSystem").values()
    assert resource["DeletionPolicy"] == "Retain"


def test_the_policy_requires_tls_and_lets_only_the_csi_role_mount_through_access_points(
    cluster: Template,
):
    policy = _one(cluster, "AWS::EFS::FileSystem")["FileSystemPolicy"]
    deny, allow = policy["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert allow["Effect"] == "Allow"
    assert allow["Action"] == ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    assert "elasticfilesystem:ClientRootAccess" not in json.dumps(policy)
    assert allow["Condition"]["Bool"] == {"elasticfilesystem:AccessedViaMountTarget": "true"}
    assert "access-point/*" in json.dumps(allow["Condition"]["ArnLike"])
    role = allow["Principal"]["AWS"]["Fn::GetAtt"][0]
    assert role.startswith("SharedFilesEfsCsiDriverRole")


def test_a_mount_target_per_zone_admits_nfs_from_the_cluster_security_group_only(
    cluster: Template,
):
    targets = cluster.find_resources("AWS::EFS::MountTarget")
    assert len(targets) == 2  # the VPC's two zones
    groups = [
        g["Properties"]
        for g in cluster.find_resources("AWS::EC2::SecurityGroup").values()
        if "shared files" in g["Properties"]["GroupDescription"]
    ]
    [group] = groups
    [ingress] = group["SecurityGroupIngress"]
    assert (ingress["FromPort"], ingress["ToPort"], ingress["IpProtocol"]) == (2049, 2049, "tcp")
    assert "ClusterSecurityGroupId" in json.dumps(ingress["SourceSecurityGroupId"])
    assert "CidrIp" not in ingress


def test_the_efs_csi_add_on_uses_its_role_through_pod_identity(cluster: Template):
    cluster.has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "aws-efs-csi-driver",
            "PodIdentityAssociations": [
                {"ServiceAccount": "efs-csi-controller-sa", "RoleArn": Match.any_value()},
                {"ServiceAccount": "efs-csi-node-sa", "RoleArn": Match.any_value()},
            ],
        },
    )
    roles = [
        r["Properties"]
        for name, r in cluster.find_resources("AWS::IAM::Role").items()
        if name.startswith("SharedFilesEfsCsiDriverRole")
    ]
    [role] = roles
    assert "ManagedPolicyArns" not in role  # mounts come from the file system policy only


def test_the_main_stack_context_names_the_file_system(cluster: Template):
    context = cluster.find_outputs("MainStackContext")
    assert f"{SHARED_FILE_SYSTEM_ID.context_key}=" in json.dumps(context)
    cluster.has_output("SharedFileSystemId", {"Value": Match.any_value()})


FILE_SYSTEM = "fs-0123456789abcdef0"


@pytest.fixture(scope="module")
def with_share(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The main stack synthesized with the cluster stack's file system named in context."""
    from cdk_app.app import build_app
    from tests.support.certificates import synth_context

    context = {
        **synth_context(tmp_path_factory.mktemp("certs")),
        SHARED_FILE_SYSTEM_ID.context_key: FILE_SYSTEM,
    }
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build_app(outdir=str(outdir), context=context)
    app.synth()
    report = json.loads((outdir / "validation-report.json").read_text())
    assert [v for p in report["pluginReports"] for v in p.get("violations", [])] == []
    return Template.from_stack(stack)


def _efs_statements(template: Template) -> list[dict[str, Any]]:
    return [
        s
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if "elasticfilesystem" in json.dumps(s.get("Action"))
        and s.get("Resource") != "*"  # the read-only Describe* calls
        and "DescribeFileSystems" not in json.dumps(s.get("Action"))  # the API's metered size
    ]


def test_the_lifecycle_makes_access_points_on_the_deployments_file_system_only(
    with_share: Template, template: Template
):
    """The review's finding: CreateAccessPoint was granted on `file-system/*`, every file
    system of the account."""
    [create] = [s for s in _efs_statements(with_share) if "CreateAccessPoint" in s["Action"]]
    resource = json.dumps(create["Resource"])
    assert f":file-system/{FILE_SYSTEM}" in resource and "file-system/*" not in resource
    # without a share (the default `off`) the lifecycle gets no EFS grant at all
    assert _efs_statements(template) == []


def test_the_lifecycle_makes_only_access_points_tagged_with_their_user(with_share: Template):
    assert ACCESS_POINT_USER_TAG == USER_TAG
    statements = _efs_statements(with_share)
    assert statements
    for statement in statements:
        condition = json.dumps(statement["Condition"])
        assert f"aws:RequestTag/{USER_TAG}" in condition
    actions = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {"elasticfilesystem:CreateAccessPoint", "elasticfilesystem:TagResource"}
