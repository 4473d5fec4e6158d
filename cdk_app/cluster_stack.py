"""The optional cluster stack, for a team starting from nothing: a VPC laid out like the main
stack's own one, an EKS cluster with access entries, the add-ons gpu-dev relies on and the
managed node groups the availability updater counts (cdk_app/node_groups.py). Synthesized only
with `-c gpudev:createCluster=true`; the main stack is then deployed into its VPC with the ids
it outputs (docs/operator-guide.md, "Starting from nothing").

L1 constructs only (`CfnCluster`, `CfnNodegroup`, `CfnAddon`, `CfnAccessEntry`): the L2
`aws_eks.Cluster` manages the cluster through a kubectl Lambda layer and custom resources,
which gpu-dev does not need (deploy/kubernetes/ is applied with kubectl by an admin).
Lookup-free, so synthesis stays offline."""

from __future__ import annotations

import ipaddress
import json

from aws_cdk import Aws, CfnOutput, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from cdk_app import fabric
from cdk_app.images import grant_node_image_pulls
from cdk_app.nag import acknowledge_public_endpoint
from cdk_app.network import DATABASE_SUBNETS_CONTEXT as DATABASE_SUBNETS
from cdk_app.network import FUNCTION_SUBNETS_CONTEXT as FUNCTION_SUBNETS
from cdk_app.network import VPC_CONTEXT, ZONES_CONTEXT, eks_cluster_name, id_list, own_vpc
from cdk_app.node_groups import NodeGroupSpec, node_disk_gib, node_group_specs
from cdk_app.shared_files import SharedFiles

CREATE_CLUSTER_CONTEXT = "gpudev:createCluster"
ADMIN_ROLES_CONTEXT = "gpudev:clusterAdminRoleArns"
NODE_PORT_CIDRS_CONTEXT = "gpudev:nodePortCidrs"
ENDPOINT_PUBLIC_CIDRS_CONTEXT = "gpudev:clusterEndpointPublicCidrs"
KUBERNETES_VERSION_CONTEXT = "gpudev:kubernetesVersion"
NODE_PORTS = (30000, 32767)  # Kubernetes' NodePort range: SSH reaches a dev pod through one
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"
CNI_SERVICE_ACCOUNT = "aws-node"  # the VPC CNI's DaemonSet (kube-system)
ROOT_DEVICE = "/dev/xvda"  # the root volume of the EKS AL2023 AMIs (standard and NVIDIA)
CONTROL_PLANE_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def wants_cluster(scope: Construct) -> bool:
    """`-c gpudev:createCluster=true` (a string) or `true` in cdk.json; off by default."""
    raw = scope.node.try_get_context(CREATE_CLUSTER_CONTEXT)
    if raw in (None, False, "", "false"):
        return False
    if raw in (True, "true"):
        return True
    raise ValueError(f"context {CREATE_CLUSTER_CONTEXT}: true or false; got {raw!r}")


def _admin_roles(scope: Construct) -> list[str]:
    roles = id_list(scope, ADMIN_ROLES_CONTEXT, "", required=False)
    if not roles:
        raise ValueError(
            f"context {ADMIN_ROLES_CONTEXT}: at least one IAM role ARN, the cluster's "
            "administrators (they apply deploy/kubernetes/; CloudFormation's role is not one)"
        )
    wrong = [role for role in roles if not (role.startswith("arn:") and ":role/" in role)]
    if wrong:
        raise ValueError(f"context {ADMIN_ROLES_CONTEXT}: IAM role ARNs; got {wrong}")
    return roles


def _networks(scope: Construct, key: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """A context list of CIDRs (an address alone is its /32 or /128), host bits unset."""
    networks = []
    for cidr in id_list(scope, key, "", required=False):
        try:
            networks.append(ipaddress.ip_network(cidr))
        except ValueError as error:
            raise ValueError(f"context {key}: {cidr!r} is not a CIDR ({error})") from None
    return networks


def _node_port_cidrs(scope: Construct) -> list[str]:
    return [str(network) for network in _networks(scope, NODE_PORT_CIDRS_CONTEXT)]


def _endpoint_public_cidrs(scope: Construct) -> list[str]:
    """The networks the operators run kubectl from, the only ones the API server's public
    endpoint answers; none (the default): no public endpoint. The nodes and the main
    stack's functions (deployed into this VPC with `MainStackContext`, admitted on 443 by
    the cluster security group) reach the private endpoint from inside the VPC."""
    key = ENDPOINT_PUBLIC_CIDRS_CONTEXT
    networks = _networks(scope, key)
    for network in networks:
        if network.version != 4:
            raise ValueError(
                f"context {key}: {network} is IPv6; an IPv4 cluster's public endpoint "
                "takes IPv4 CIDRs only"
            )
        if network.prefixlen == 0:
            raise ValueError(
                f"context {key}: {network} is the whole internet; list the networks "
                "operators run kubectl from, or none for the private endpoint only"
            )
    return [str(network) for network in networks]


def _managed(name: str) -> iam.IManagedPolicy:
    return iam.ManagedPolicy.from_aws_managed_policy_name(name)


class ClusterStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.cluster_name = eks_cluster_name(self)
        specs = node_group_specs(self)  # validate every context value before building
        admins = _admin_roles(self)
        node_port_cidrs = _node_port_cidrs(self)
        self.endpoint_public_cidrs = _endpoint_public_cidrs(self)

        vpc, functions, database = own_vpc(self)
        public = vpc.select_subnets(subnet_type=ec2.SubnetType.PUBLIC)
        private = vpc.select_subnets(subnet_type=functions.subnet_type)
        self.cluster = self._cluster(public.subnet_ids + private.subnet_ids)
        cluster_name = self.cluster.ref
        for index, role_arn in enumerate(admins):
            eks.CfnAccessEntry(
                self,
                f"AdminAccessEntry{index}",
                cluster_name=cluster_name,
                principal_arn=role_arn,
                type="STANDARD",
                access_policies=[
                    eks.CfnAccessEntry.AccessPolicyProperty(
                        policy_arn=f"arn:{Aws.PARTITION}:eks::aws:cluster-access-policy/"
                        "AmazonEKSClusterAdminPolicy",
                        access_scope=eks.CfnAccessEntry.AccessScopeProperty(type="cluster"),
                    )
                ],
            )
        security_group = self.cluster.attr_cluster_security_group_id
        for index, cidr in enumerate(node_port_cidrs):
            ec2.CfnSecurityGroupIngress(
                self,
                f"NodePortIngress{index}",
                group_id=security_group,
                ip_protocol="tcp",
                from_port=NODE_PORTS[0],
                to_port=NODE_PORTS[1],
                cidr_ip=cidr if ":" not in cidr else None,
                cidr_ipv6=cidr if ":" in cidr else None,
                description="SSH to dev pods through their NodePort services",
            )

        pod_identity = eks.CfnAddon(
            self, "PodIdentityAgent", addon_name="eks-pod-identity-agent", cluster_name=cluster_name
        )
        # The CNI's policy (ENIs and addresses for every pod) goes to the aws-node service
        # account through pod identity, not to the node role: nothing else on a node can use
        # it, and with IMDS closed to pods (hop limit 1) no pod reaches the node role at all.
        # The agent runs on the host network, so aws-node gets credentials before any pod
        # has an address.
        vpc_cni = eks.CfnAddon(
            self,
            "VpcCni",
            addon_name="vpc-cni",
            cluster_name=cluster_name,
            resolve_conflicts="OVERWRITE",  # EKS bootstrapped a self-managed one
            configuration_values=json.dumps({"enableNetworkPolicy": "true"}),
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=self._pod_identity_role("VpcCniRole", "AmazonEKS_CNI_Policy").role_arn,
                    service_account=CNI_SERVICE_ACCOUNT,
                )
            ],
        )
        vpc_cni.add_resource_dependency(pod_identity)
        node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            managed_policies=[
                _managed("AmazonEKSWorkerNodePolicy"),
                _managed("AmazonEC2ContainerRegistryPullOnly"),
            ],
        )
        grant_node_image_pulls(node_role)  # the ECR pull-through cache (cdk_app/images.py)
        groups = [self._node_group(spec, node_role, public.subnet_ids, vpc_cni) for spec in specs]
        if any(fabric.efa_interfaces(spec.entry.instance_type) for spec in specs):
            fabric.efa_security_group_rule(self, security_group)
        ebs_csi_role = self._pod_identity_role(
            "EbsCsiDriverRole", "service-role/AmazonEBSCSIDriverPolicy"
        )
        ebs_csi = eks.CfnAddon(
            self,
            "EbsCsiDriver",
            addon_name="aws-ebs-csi-driver",
            cluster_name=cluster_name,
            resolve_conflicts="OVERWRITE",
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=ebs_csi_role.role_arn, service_account=EBS_CSI_SERVICE_ACCOUNT
                )
            ],
        )
        ebs_csi.add_resource_dependency(pod_identity)
        for group in groups:  # its controller runs on a CPU node
            ebs_csi.add_resource_dependency(group)
        self.shared_files = SharedFiles(
            self,
            "SharedFiles",
            vpc=vpc,
            subnet_ids=private.subnet_ids,  # one per zone: the nodes' zones
            cluster_name=cluster_name,
            cluster_security_group_id=security_group,
            depends_on=[pod_identity, *groups],
        )
        self._outputs(vpc, private.subnet_ids, vpc.select_subnets(subnet_type=database.subnet_type))

    def _pod_identity_role(self, construct_id: str, managed_policy: str) -> iam.Role:
        """A role only EKS Pod Identity assumes (for the service account an add-on names)."""
        pods = iam.ServicePrincipal("pods.eks.amazonaws.com")
        role = iam.Role(
            self, construct_id, assumed_by=pods, managed_policies=[_managed(managed_policy)]
        )
        role.assume_role_policy.add_statements(  # type: ignore[union-attr]
            iam.PolicyStatement(actions=["sts:TagSession"], principals=[pods])
        )
        return role

    def _launch_template(self, spec: NodeGroupSpec) -> ec2.CfnLaunchTemplate:
        """IMDSv2 only, with a hop limit of 1: a pod (one hop behind the node) never gets a
        metadata token, so never the node role's credentials, even where the network
        policies are not enforced. The root volume is sized for the pods' /workspace
        (node_groups.node_disk_gib), gp3 and encrypted. No AMI: EKS picks it from the
        group's AMI type and adds its own bootstrap. An EFA type's: its EFA interfaces and
        its placement group (cdk_app/fabric.py)."""
        efa = fabric.efa_interfaces(spec.entry.instance_type)
        interfaces, placement = None, None
        if efa:
            group = fabric.placement_group(self, spec.gpu_type)
            security_group = self.cluster.attr_cluster_security_group_id
            interfaces = fabric.network_interfaces(efa, security_group)
            placement = ec2.CfnLaunchTemplate.PlacementProperty(group_name=group.ref)
        return ec2.CfnLaunchTemplate(
            self,
            f"LaunchTemplate-{spec.gpu_type}",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_endpoint="enabled",
                    http_tokens="required",
                    http_put_response_hop_limit=1,
                ),
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name=ROOT_DEVICE,
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            volume_size=node_disk_gib(spec.entry),
                            volume_type="gp3",
                            encrypted=True,
                            delete_on_termination=True,
                        ),
                    )
                ],
                network_interfaces=interfaces,
                placement=placement,
            ),
        )

    def _cluster(self, subnet_ids: list[str]) -> eks.CfnCluster:
        role = iam.Role(
            self,
            "ClusterRole",
            assumed_by=iam.ServicePrincipal("eks.amazonaws.com"),
            managed_policies=[_managed("AmazonEKSClusterPolicy")],
        )
        version = self.node.try_get_context(KUBERNETES_VERSION_CONTEXT)
        public_cidrs = self.endpoint_public_cidrs
        cluster = eks.CfnCluster(
            self,
            "Cluster",
            name=self.cluster_name,
            role_arn=role.role_arn,
            version=str(version) if version else None,  # None: EKS's default at creation
            access_config=eks.CfnCluster.AccessConfigProperty(
                authentication_mode="API_AND_CONFIG_MAP",
                bootstrap_cluster_creator_admin_permissions=False,
            ),
            resources_vpc_config=eks.CfnCluster.ResourcesVpcConfigProperty(
                subnet_ids=subnet_ids,
                endpoint_private_access=True,
                endpoint_public_access=bool(public_cidrs),
                public_access_cidrs=public_cidrs or None,
            ),
            logging=eks.CfnCluster.LoggingProperty(
                cluster_logging=eks.CfnCluster.ClusterLoggingProperty(
                    enabled_types=[
                        eks.CfnCluster.LoggingTypeConfigProperty(type=kind)
                        for kind in CONTROL_PLANE_LOGS
                    ]
                )
            ),
        )
        if public_cidrs:
            acknowledge_public_endpoint(cluster, public_cidrs)
        return cluster

    def _node_group(
        self, spec: NodeGroupSpec, role: iam.Role, subnet_ids: list[str], vpc_cni: eks.CfnAddon
    ) -> eks.CfnNodegroup:
        """In the public subnets: users reach their pod's NodePort at the node's public
        address (the allocator records `ExternalIP`). The launch template carries the disk
        size and the metadata options (a node group with one takes no `disk_size`)."""
        template = self._launch_template(spec)
        efa = fabric.efa_interfaces(spec.entry.instance_type) > 0
        # EFA never crosses a zone: an EFA group's nodes share one subnet (cdk_app/fabric.py)
        subnet_ids = subnet_ids[:1] if efa else subnet_ids
        labels = spec.labels | (fabric.fabric_labels(spec.gpu_type) if efa else {})
        group = eks.CfnNodegroup(
            self,
            f"NodeGroup-{spec.gpu_type}",
            cluster_name=self.cluster.ref,
            nodegroup_name=spec.name,
            node_role=role.role_arn,
            subnets=subnet_ids,
            ami_type=spec.ami_type,
            instance_types=[spec.entry.instance_type],
            launch_template=eks.CfnNodegroup.LaunchTemplateSpecificationProperty(
                id=template.ref, version=template.attr_latest_version_number
            ),
            scaling_config=eks.CfnNodegroup.ScalingConfigProperty(
                min_size=spec.min_size, max_size=spec.max_size, desired_size=spec.desired_size
            ),
            labels=labels,
            taints=[eks.CfnNodegroup.TaintProperty(**taint) for taint in spec.taints] or None,
            update_config=eks.CfnNodegroup.UpdateConfigProperty(max_unavailable=1),
        )
        group.add_resource_dependency(vpc_cni)  # nodes start with network policy enabled
        return group

    def _outputs(
        self, vpc: ec2.IVpc, function_subnets: list[str], database: ec2.SelectedSubnets
    ) -> None:
        zones = Fn.join(",", vpc.availability_zones)
        functions = Fn.join(",", function_subnets)
        databases = Fn.join(",", database.subnet_ids)
        group = self.cluster.attr_cluster_security_group_id
        CfnOutput(self, "ClusterName", value=self.cluster.ref)
        CfnOutput(self, "VpcId", value=vpc.vpc_id)
        CfnOutput(self, "AvailabilityZones", value=zones)
        CfnOutput(self, "FunctionSubnetIds", value=functions)
        CfnOutput(self, "DatabaseSubnetIds", value=databases)
        CfnOutput(self, "ClusterSecurityGroupId", value=group)
        CfnOutput(
            self,
            "MainStackContext",
            description="Append to `cdk deploy GpuDev` (or copy into cdk.json)",
            value=f"-c {VPC_CONTEXT}={vpc.vpc_id} -c {ZONES_CONTEXT}={zones} "
            f"-c {FUNCTION_SUBNETS}={functions} -c {DATABASE_SUBNETS}={databases} "
            f"-c gpudev:clusterSecurityGroupId={group} "
            f"-c gpudev:sharedFileSystemId={self.shared_files.file_system.ref}"
            + self._team_share_context(),
        )

    def _team_share_context(self) -> str:
        """The team access point for the main stack, when the team share is on."""
        point = self.shared_files.team_access_point
        return "" if point is None else f" -c gpudev:teamShareAccessPointId={point.ref}"
