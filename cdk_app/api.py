"""The REST API: `AWS_IAM` on every method but the declared public routes, access logs,
X-Ray, throttling, the resource policy (cdk_app/access.py), all routes to the API function."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_logs as logs

from cdk_app.access import ApiAccess
from cdk_app.declaration import Deployment
from cdk_app.functions import StackParts
from cdk_app.nag import acknowledge_public_route


def build_rest_api(
    parts: StackParts, deployment: Deployment, access: ApiAccess
) -> apigateway.RestApi:
    scope = parts.stack
    access_logs = logs.LogGroup(
        scope,
        "ApiAccessLogs",
        retention=logs.RetentionDays.THREE_MONTHS,
        removal_policy=RemovalPolicy.DESTROY,
    )
    rest_api = apigateway.RestApi(
        scope,
        "RestApi",
        rest_api_name="gpu-dev",
        description="gpu-dev API: SigV4 (AWS_IAM) on every route but the public ones",
        cloud_watch_role=True,
        cloud_watch_role_removal_policy=RemovalPolicy.DESTROY,
        deploy_options=apigateway.StageOptions(
            stage_name="v1",
            access_log_destination=apigateway.LogGroupLogDestination(access_logs),
            access_log_format=apigateway.AccessLogFormat.json_with_standard_fields(
                caller=True,
                http_method=True,
                ip=True,
                protocol=True,
                request_time=True,
                resource_path=True,
                response_length=True,
                status=True,
                user=True,
            ),
            logging_level=apigateway.MethodLoggingLevel.ERROR,
            metrics_enabled=True,
            tracing_enabled=True,
            throttling_rate_limit=50,
            throttling_burst_limit=100,
        ),
        default_method_options=apigateway.MethodOptions(
            authorization_type=apigateway.AuthorizationType.IAM
        ),
        policy=access.resource_policy(deployment.api.public_routes),
    )
    api_function = parts.functions[deployment.api.function]
    for name, value in access.environment().items():
        api_function.add_environment(name, value)
    integration = apigateway.LambdaIntegration(api_function)
    # A public route's resource carries only its public methods: API Gateway answers any
    # other method there 403 "Missing Authentication Token" (no fallback to the proxy).
    for method, path in deployment.api.public_routes:
        acknowledge_public_route(
            rest_api.root.resource_for_path(path).add_method(
                method, integration, authorization_type=apigateway.AuthorizationType.NONE
            )
        )
    rest_api.root.add_proxy(default_integration=integration, any_method=True)
    return rest_api
