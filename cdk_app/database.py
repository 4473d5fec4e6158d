"""Aurora PostgreSQL Serverless v2 in the database subnets, reachable from the functions'
security group; IAM database authentication for the functions' login roles."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_rds as rds
from constructs import Construct

from cdk_app.network import Network

DATABASE_NAME = "gpudev"


def build_database(scope: Construct, network: Network) -> rds.DatabaseCluster:
    database = rds.DatabaseCluster(
        scope,
        "Database",
        engine=rds.DatabaseClusterEngine.aurora_postgres(
            version=rds.AuroraPostgresEngineVersion.VER_17_5
        ),
        credentials=rds.Credentials.from_generated_secret("gpudev"),
        default_database_name=DATABASE_NAME,
        writer=rds.ClusterInstance.serverless_v2("writer"),
        serverless_v2_min_capacity=0.5,
        serverless_v2_max_capacity=8,
        vpc=network.vpc,
        vpc_subnets=network.database_subnets,
        storage_encrypted=True,
        iam_authentication=True,
        deletion_protection=True,
        backup=rds.BackupProps(retention=Duration.days(14)),
        removal_policy=RemovalPolicy.SNAPSHOT,
    )
    database.connections.allow_default_port_from(
        network.functions_security_group, "gpu-dev functions"
    )
    return database
