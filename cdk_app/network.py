"""Where the functions and the database run: a VPC of the stack's own (the default), or the
EKS cluster's VPC chosen by CDK context so the functions reach a private cluster endpoint.

Lookup-free on purpose (synth stays offline): the ids are passed in, never looked up.

    cdk deploy -c gpudev:vpcId=vpc-0abc \\
      -c 'gpudev:availabilityZones=["us-east-2a","us-east-2b"]' \\
      -c 'gpudev:functionSubnetIds=["subnet-1","subnet-2"]' \\
      -c 'gpudev:databaseSubnetIds=["subnet-3","subnet-4"]' \\
      -c gpudev:clusterSecurityGroupId=sg-0def

Function subnets must reach AWS APIs (a NAT gateway or VPC endpoints); database subnets
default to the function subnets; the cluster security group, when given, gets two rules
from the functions' security group: HTTPS (the EKS API) and 9400 (the GPU nodes' DCGM
exporters, scraped by the availability updater)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

VPC_CONTEXT = "gpudev:vpcId"
ZONES_CONTEXT = "gpudev:availabilityZones"
FUNCTION_SUBNETS_CONTEXT = "gpudev:functionSubnetIds"
DATABASE_SUBNETS_CONTEXT = "gpudev:databaseSubnetIds"
CLUSTER_SECURITY_GROUP_CONTEXT = "gpudev:clusterSecurityGroupId"
CLUSTER_NAME_CONTEXT = "eksClusterName"
DEFAULT_CLUSTER_NAME = "pytorch-gpu-dev-cluster"
DCGM_EXPORTER_PORT = 9400


@dataclass(frozen=True)
class Network:
    vpc: ec2.IVpc
    function_subnets: ec2.SubnetSelection
    database_subnets: ec2.SubnetSelection
    functions_security_group: ec2.SecurityGroup


def eks_cluster_name(scope: Construct) -> str:
    """The EKS cluster's name: context `eksClusterName`, the same for both stacks."""
    return str(scope.node.try_get_context(CLUSTER_NAME_CONTEXT) or DEFAULT_CLUSTER_NAME)


def id_list(scope: Construct, key: str, prefix: str, *, required: bool) -> list[str]:
    """A context list: JSON from `-c key='[...]'`, a list from cdk.json, or comma-separated."""
    raw = scope.node.try_get_context(key)
    if raw is None or raw == "" or raw == []:
        if required:
            raise ValueError(f"context {key}: required with {VPC_CONTEXT}")
        return []
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"context {key}: a list of ids; got {raw!r}")
    values = [item.strip() for item in raw]
    wrong = [value for value in values if not value.startswith(prefix)]
    if wrong:
        raise ValueError(f"context {key}: ids start with {prefix!r}; got {wrong}")
    return values


def build_network(scope: Construct) -> Network:
    vpc_id = scope.node.try_get_context(VPC_CONTEXT)
    if vpc_id:
        vpc, functions, database = _existing_vpc(scope, str(vpc_id))
    else:
        vpc, functions, database = own_vpc(scope)
    security_group = ec2.SecurityGroup(
        scope, "FunctionsSecurityGroup", vpc=vpc, description="gpu-dev Lambda functions"
    )
    cluster_group = scope.node.try_get_context(CLUSTER_SECURITY_GROUP_CONTEXT)
    if cluster_group:
        if not str(cluster_group).startswith("sg-"):
            raise ValueError(
                f"context {CLUSTER_SECURITY_GROUP_CONTEXT}: a security group id; "
                f"got {cluster_group!r}"
            )
        cluster = ec2.SecurityGroup.from_security_group_id(
            scope, "ClusterSecurityGroup", str(cluster_group), mutable=True
        )
        cluster.add_ingress_rule(
            security_group, ec2.Port.tcp(443), "gpu-dev functions to the EKS API"
        )
        # The availability updater scrapes each GPU node's DCGM exporter (hostPort 9400;
        # deploy/kubernetes/monitoring/dcgm-exporter.yaml, docs/utilisation.md).
        cluster.add_ingress_rule(
            security_group, ec2.Port.tcp(DCGM_EXPORTER_PORT), "gpu-dev updater to DCGM exporters"
        )
    return Network(vpc, functions, database, security_group)


def own_vpc(scope: Construct) -> tuple[ec2.IVpc, ec2.SubnetSelection, ec2.SubnetSelection]:
    vpc = ec2.Vpc(
        scope,
        "Network",
        max_azs=2,
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC),
            ec2.SubnetConfiguration(
                name="functions", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
            ),
            ec2.SubnetConfiguration(name="database", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        ],
        flow_logs={"all": ec2.FlowLogOptions(traffic_type=ec2.FlowLogTrafficType.REJECT)},
    )
    return (
        vpc,
        ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
    )


def _existing_vpc(
    scope: Construct, vpc_id: str
) -> tuple[ec2.IVpc, ec2.SubnetSelection, ec2.SubnetSelection]:
    if not vpc_id.startswith("vpc-"):
        raise ValueError(f"context {VPC_CONTEXT}: a VPC id (vpc-...); got {vpc_id!r}")
    zones = scope.node.try_get_context(ZONES_CONTEXT)
    zones = json.loads(zones) if isinstance(zones, str) and zones.startswith("[") else zones
    if isinstance(zones, str):
        zones = zones.split(",")
    if not isinstance(zones, list) or len(zones) < 2:
        raise ValueError(
            f"context {ZONES_CONTEXT}: two availability zones at least (Aurora needs two), "
            f"required with {VPC_CONTEXT}; got {zones!r}"
        )
    function_subnets = id_list(scope, FUNCTION_SUBNETS_CONTEXT, "subnet-", required=True)
    database_subnets = id_list(scope, DATABASE_SUBNETS_CONTEXT, "subnet-", required=False)
    for key, subnets in (
        (FUNCTION_SUBNETS_CONTEXT, function_subnets),
        (DATABASE_SUBNETS_CONTEXT, database_subnets),
    ):
        if subnets and len(subnets) % len(zones):
            raise ValueError(
                f"context {key}: one subnet per availability zone ({len(zones)} zones); "
                f"got {len(subnets)}"
            )
    vpc = ec2.Vpc.from_vpc_attributes(
        scope,
        "Network",
        vpc_id=vpc_id,
        availability_zones=[str(zone).strip() for zone in zones],
        private_subnet_ids=function_subnets,
        isolated_subnet_ids=database_subnets or None,
    )
    functions = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    database = (
        ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        if database_subnets
        else functions
    )
    return vpc, functions, database
