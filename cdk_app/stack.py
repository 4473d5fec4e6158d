"""The gpu-dev stack: network, Aurora PostgreSQL, the shared layer, and the migration
trigger. Later issues add the API, queues, state machine and schedules here."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack, triggers
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_rds as rds
from constructs import Construct

from cdk_app.function import GpuDevFunction
from cdk_app.layer_bundling import layer_bundling, migrations_digest
from cdk_app.paths import LAYER_DIR

DATABASE_NAME = "gpudev"


class GpuDevStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: object):
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]

        self.vpc = ec2.Vpc(
            self,
            "Network",
            max_azs=2,
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC),
                ec2.SubnetConfiguration(
                    name="functions", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                ),
                ec2.SubnetConfiguration(
                    name="database", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED
                ),
            ],
            flow_logs={"all": ec2.FlowLogOptions(traffic_type=ec2.FlowLogTrafficType.REJECT)},
        )
        self.functions_security_group = ec2.SecurityGroup(
            self, "FunctionsSecurityGroup", vpc=self.vpc, description="gpu-dev Lambda functions"
        )

        self.database = rds.DatabaseCluster(
            self,
            "Database",
            engine=rds.DatabaseClusterEngine.aurora_postgres(
                version=rds.AuroraPostgresEngineVersion.VER_17_5
            ),
            credentials=rds.Credentials.from_generated_secret("gpudev"),
            default_database_name=DATABASE_NAME,
            writer=rds.ClusterInstance.serverless_v2("writer"),
            serverless_v2_min_capacity=0.5,
            serverless_v2_max_capacity=8,
            vpc=self.vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            storage_encrypted=True,
            iam_authentication=True,
            deletion_protection=True,
            backup=rds.BackupProps(retention=Duration.days(14)),
            removal_policy=RemovalPolicy.SNAPSHOT,
        )
        self.database.connections.allow_default_port_from(
            self.functions_security_group, "gpu-dev functions"
        )
        assert self.database.secret is not None

        self.layer = lambda_.LayerVersion(
            self,
            "SharedLayer",
            code=lambda_.Code.from_asset(str(LAYER_DIR), bundling=layer_bundling()),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="gpudev package, its pinned runtime dependencies and migrations/",
        )

        self.database_environment = {
            "DB_SECRET_ARN": self.database.secret.secret_arn,
            "DB_NAME": DATABASE_NAME,
        }
        migrate = GpuDevFunction(
            self,
            "MigrateFunction",
            folder="migrate",
            handler="handler.handler",
            layer=self.layer,
            timeout=Duration.minutes(5),
            vpc=self.vpc,
            security_groups=[self.functions_security_group],
            environment={
                **self.database_environment,
                # A new set of migrations is a new function version, which re-runs the trigger.
                "MIGRATIONS_SHA256": migrations_digest(),
            },
        )
        self.database.secret.grant_read(migrate)
        triggers.Trigger(
            self,
            "MigrateOnDeploy",
            handler=migrate,
            execute_after=[self.database],
            execute_on_handler_change=True,
            timeout=Duration.minutes(5),
        )
