"""One way to build a gpu-dev Lambda function from its declaration: Python 3.12 on arm64,
the shared layer, X-Ray tracing (without captured responses), a log group with retention
and powertools settings."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk_app.declaration import FunctionSpec


class GpuDevFunction(lambda_.Function):
    def __init__(
        self,
        scope: Construct,
        spec: FunctionSpec,
        *,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: list[ec2.ISecurityGroup] | None = None,
    ):
        construct_id = f"{spec.name}Function"
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
            code=lambda_.Code.from_asset(str(spec.code_dir), exclude=["__pycache__", "*.pyc"]),
            handler=spec.handler,
            layers=[layer],
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            reserved_concurrent_executions=spec.reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            vpc=vpc,
            vpc_subnets=vpc_subnets if vpc else None,
            security_groups=security_groups,
            environment={
                "POWERTOOLS_SERVICE_NAME": spec.deployed_name,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                # Return values carry Jupyter URLs with tokens (the API) and task outcomes:
                # never recorded as X-Ray metadata, whatever a decorator says.
                "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
                **spec.environment,
                **environment,
            },
        )
