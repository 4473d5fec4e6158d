"""One way to build a gpu-dev Lambda function: Python 3.12 on arm64, the shared layer,
X-Ray tracing, a log group with retention and powertools settings, set once."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_app.paths import FUNCTIONS_DIR

METRICS_NAMESPACE = "GpuDev"


class GpuDevFunction(lambda_.Function):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        folder: str,
        handler: str,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str] | None = None,
        timeout: Duration | None = None,
        memory_size: int = 512,
        vpc: ec2.IVpc | None = None,
        security_groups: list[ec2.ISecurityGroup] | None = None,
    ):
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        super().__init__(
            scope,
            construct_id,
            runtime=lambda_.Runtime.PYTHON_3_12,
            architecture=lambda_.Architecture.ARM_64,
            code=lambda_.Code.from_asset(
                str(FUNCTIONS_DIR / folder), exclude=["__pycache__", "*.pyc"]
            ),
            handler=handler,
            layers=[layer],
            timeout=timeout or Duration.seconds(30),
            memory_size=memory_size,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
            if vpc
            else None,
            security_groups=security_groups,
            environment={
                "POWERTOOLS_SERVICE_NAME": folder.replace("_", "-"),
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                **(environment or {}),
            },
        )
