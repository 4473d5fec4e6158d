"""The personal network file system in the cluster stack (docs/shared-files.md): one EFS
file system for the deployment, encrypted with a key of its own (rotated), Infrequent
Access after 30 days, a mount target in each of the cluster's zones (its private subnets)
admitting NFS (TCP 2049) from the cluster security group only (the nodes': the EFS CSI
driver mounts from the node's network, not the pod's), the file system policy of
cdk_app/shared_files_policy.py (TLS always, IAM always, the driver's role through access
points only), and the EFS CSI driver add-on with that role (pod identity, for its
controller's and its node plugin's service accounts).

Each user's access point is made by the lifecycle on their first reservation
(gpudev/shared_files/; its grants are in cdk_app/declaration.py SHARED_FILES_GRANTS). The
team's one access point is made here when `gpudev:teamShare` is on (cdk_app/team_share.py)."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_efs as efs
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from cdk_app.declaration import SHARED_FILES_CREATION_TOKEN, SHARED_FILES_IA_AFTER
from cdk_app.shared_files_policy import file_system_policy
from cdk_app.team_share import team_access_point, team_share_mode

NFS_PORT = 2049
EFS_CSI_SERVICE_ACCOUNTS = ("efs-csi-controller-sa", "efs-csi-node-sa")


class SharedFiles(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnet_ids: list[str],
        cluster_name: str,
        cluster_security_group_id: str,
        depends_on: list[eks.CfnAddon | eks.CfnNodegroup],
    ) -> None:
        super().__init__(scope, construct_id)
        key = kms.Key(
            self,
            "Key",
            description="gpu-dev: the personal network file system",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        pods = iam.ServicePrincipal("pods.eks.amazonaws.com")
        self.csi_role = iam.Role(self, "EfsCsiDriverRole", assumed_by=pods)
        self.csi_role.assume_role_policy.add_statements(  # type: ignore[union-attr]
            iam.PolicyStatement(actions=["sts:TagSession"], principals=[pods])
        )
        group = ec2.CfnSecurityGroup(
            self,
            "MountTargets",
            vpc_id=vpc.vpc_id,
            group_description="gpu-dev shared files: NFS from the cluster nodes only",
            security_group_ingress=[
                ec2.CfnSecurityGroup.IngressProperty(
                    ip_protocol="tcp",
                    from_port=NFS_PORT,
                    to_port=NFS_PORT,
                    source_security_group_id=cluster_security_group_id,
                    description="NFS from the cluster nodes (the EFS CSI node plugin)",
                )
            ],
            security_group_egress=[  # nothing: a mount target only answers
                ec2.CfnSecurityGroup.EgressProperty(
                    ip_protocol="icmp",
                    from_port=252,
                    to_port=86,
                    cidr_ip="255.255.255.255/32",
                    description="Disallow all egress",
                )
            ],
        )
        file_system_arn = (
            f"arn:{Aws.PARTITION}:elasticfilesystem:{Aws.REGION}:{Aws.ACCOUNT_ID}:file-system/*"
        )
        self.file_system = efs.CfnFileSystem(
            self,
            "FileSystem",
            encrypted=True,
            kms_key_id=key.key_arn,
            performance_mode="generalPurpose",
            throughput_mode="elastic",
            lifecycle_policies=[
                efs.CfnFileSystem.LifecyclePolicyProperty(transition_to_ia=SHARED_FILES_IA_AFTER)
            ],
            backup_policy=efs.CfnFileSystem.BackupPolicyProperty(status="ENABLED"),
            file_system_tags=[
                efs.CfnFileSystem.ElasticFileSystemTagProperty(
                    key="Name", value=SHARED_FILES_CREATION_TOKEN
                )
            ],
            file_system_policy=file_system_policy(
                file_system_arn=file_system_arn,
                csi_role_arn=self.csi_role.role_arn,
                access_points_arn=f"arn:{Aws.PARTITION}:elasticfilesystem:{Aws.REGION}:"
                f"{Aws.ACCOUNT_ID}:access-point/*",
            ),
        )
        self.file_system.apply_removal_policy(RemovalPolicy.RETAIN)  # users' files
        for index, subnet_id in enumerate(subnet_ids):
            efs.CfnMountTarget(
                self,
                f"MountTarget{index}",
                file_system_id=self.file_system.ref,
                subnet_id=subnet_id,
                security_groups=[group.ref],
            )
        addon = eks.CfnAddon(
            self,
            "EfsCsiDriver",
            addon_name="aws-efs-csi-driver",
            cluster_name=cluster_name,
            resolve_conflicts="OVERWRITE",
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=self.csi_role.role_arn, service_account=account
                )
                for account in EFS_CSI_SERVICE_ACCOUNTS
            ],
        )
        for dependency in depends_on:  # the pod identity agent; a node for its controller
            addon.add_resource_dependency(dependency)
        CfnOutput(scope, "SharedFileSystemId", value=self.file_system.ref)
        # The team share at /shared, when gpudev:teamShare is ro or rw (cdk_app/team_share.py)
        self.team_access_point: efs.CfnAccessPoint | None = None
        if team_share_mode(self) != "off":
            self.team_access_point = team_access_point(self, self.file_system)
            CfnOutput(scope, "TeamShareAccessPointId", value=self.team_access_point.ref)
