"""Every function the declaration lists, built on the shared layer with its environment,
database access, grants, Kubernetes identity and alarms; and the migrations' deploy trigger.
(`cdk_app/function.py` is the one Lambda construct each of them is.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import (
    Annotations,
    Aws,
    CfnRule,
    CfnRuleAssertion,
    Duration,
    Fn,
    Stack,
    Token,
    triggers,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_rds as rds
from constructs import Construct

from cdk_app.alarms import ALARM_PERIOD, Alarms
from cdk_app.ca_bundle import (
    PLACEHOLDER_CONTEXT,
    PLACEHOLDER_RULE_MESSAGE,
    RdsCaBundleMissing,
    configured_path,
    placeholder_allowed,
    rds_ca_bundle,
)
from cdk_app.database import DATABASE_NAME
from cdk_app.declaration import (
    METRICS_NAMESPACE,
    MIGRATE,
    SHARED_FILE_SYSTEM_ID,
    SHARED_FILES_GRANTS,
    FunctionSpec,
    ResourceGrant,
)
from cdk_app.function import GpuDevFunction
from cdk_app.layer_bundling import layer_bundling, migrations_digest
from cdk_app.network import Network
from cdk_app.paths import CA_BUNDLE_CONTEXT, LAYER_DIR


@dataclass(frozen=True)
class StackParts:
    """What the API, queues and state machines are wired to: the stack (the scope of every
    construct, so logical ids stay the stack's own), its functions by name, its alarms."""

    stack: Stack
    functions: Mapping[str, GpuDevFunction]
    alarms: Alarms


def build_shared_layer(scope: Construct) -> lambda_.LayerVersion:
    return lambda_.LayerVersion(
        scope,
        "SharedLayer",
        code=lambda_.Code.from_asset(
            str(LAYER_DIR),
            bundling=layer_bundling(shipped_ca_bundle(scope)),
        ),
        compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
        compatible_architectures=[lambda_.Architecture.ARM_64],
        description="gpudev package, its pinned runtime dependencies and migrations/",
    )


def shipped_ca_bundle(scope: Construct) -> Path | None:
    """The checked RDS CA bundle; None (the placeholder) only in a review synth
    (`gpudev:placeholderCaBundle`, set by `make synth`), which then says so and gets a
    CloudFormation rule that fails any deploy of its template."""
    try:
        return rds_ca_bundle(configured_path(scope.node.try_get_context(CA_BUNDLE_CONTEXT)))
    except RdsCaBundleMissing as missing:
        if not placeholder_allowed(scope.node.try_get_context(PLACEHOLDER_CONTEXT)):
            raise
        Annotations.of(scope).add_warning_v2(
            PLACEHOLDER_CONTEXT,
            f"PLACEHOLDER RDS CA bundle in the layer, for review only: {missing} "
            "A deploy needs the real one, and refuses this template.",
        )
    CfnRule(
        Stack.of(scope),
        "RdsCaBundleIsPlaceholder",
        assertions=[
            CfnRuleAssertion(
                # Never true, as CDK's own CheckBootstrapVersion rule is built: the
                # version of the bootstrap stack is a number, never this word.
                assert_=Fn.condition_contains(
                    ["placeholder-rds-ca-bundle"], Fn.ref("BootstrapVersion")
                ),
                assert_description=PLACEHOLDER_RULE_MESSAGE,
            )
        ],
    )
    return None


class FunctionBuilder:
    """What every function shares (the stack, layer, network, database, alarms, cluster name)
    and `build(spec)`: one function from its declaration, its constructs on the stack."""

    def __init__(
        self,
        stack: Stack,
        *,
        layer: lambda_.ILayerVersion,
        network: Network,
        database: rds.DatabaseCluster,
        alarms: Alarms,
        cluster_name: str,
    ) -> None:
        self._stack = stack
        self._layer = layer
        self._network = network
        self._database = database
        self._alarms = alarms
        self._cluster_name = cluster_name

    def build(self, spec: FunctionSpec) -> GpuDevFunction:
        secret = self._database.secret
        assert secret is not None
        access = spec.database
        uses_database = spec.uses_database
        function = GpuDevFunction(
            self._stack,
            spec,
            layer=self._layer,
            environment=self._environment(spec),
            vpc=self._network.vpc if uses_database else None,
            vpc_subnets=self._network.function_subnets,
            security_groups=[self._network.functions_security_group] if uses_database else None,
        )
        if uses_database and access is not None:
            if access.login_user:
                # rds-db:connect on dbuser:<cluster resource id>/<login role>, nothing else
                self._database.grant_connect(function, access.login_user)
            else:
                secret.grant_read(function)
        if spec.describe_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=list(spec.describe_actions), resources=["*"])
            )
        shared_file_system = str(
            self._stack.node.try_get_context(SHARED_FILE_SYSTEM_ID.context_key)
            or SHARED_FILE_SYSTEM_ID.default
        )
        for grant in spec.grants:
            on_the_share = any("{shared_file_system}" in r for r in grant.resources)
            if shared_file_system == "off" and (grant in SHARED_FILES_GRANTS or on_the_share):
                continue  # no share: nothing to grant on it
            function.add_to_role_policy(
                policy_statement(grant, self._cluster_name, shared_file_system)
            )
        if spec.uses_cluster:
            self._grant_cluster_access(function, spec)
        self._alarm_on(function, spec)
        return function

    def _environment(self, spec: FunctionSpec) -> dict[str, str]:
        environment: dict[str, str] = {}
        access = spec.database
        if spec.uses_database:
            if access is None:
                raise ValueError(
                    f"{spec.name} uses the database: declare its role and limits "
                    "(database=DatabaseAccess(...) in cdk_app/declaration.py)"
                )
            environment = {
                "DB_NAME": DATABASE_NAME,
                "DB_APPLICATION_NAME": spec.deployed_name,
                **access.environment(),
            }
            endpoint = self._database.cluster_endpoint
            if access.login_user:  # IAM database authentication as its group's login role
                environment["DB_HOST"] = endpoint.hostname
                environment["DB_PORT"] = Token.as_string(endpoint.port)
            else:  # the migrations: the master user, owner of the schema
                secret = self._database.secret
                assert secret is not None
                environment["DB_SECRET_ARN"] = secret.secret_arn
        if spec.uses_cluster:
            environment["EKS_CLUSTER_NAME"] = self._cluster_name
        environment.update(context_environment(self._stack, spec))
        if spec.name == MIGRATE.name:
            # A new set of migrations is a new function version, which re-runs the trigger.
            environment["MIGRATIONS_SHA256"] = migrations_digest()
        return environment

    def _grant_cluster_access(self, function: GpuDevFunction, spec: FunctionSpec) -> None:
        """eks:DescribeCluster on our cluster, and a Kubernetes identity for the role: its
        group (bound by deploy/kubernetes/rbac.yaml: readers list nodes and pods; the
        lifecycle also manages pods, services, config maps and secrets in gpu-dev)."""
        cluster_arn = self._stack.format_arn(
            service="eks", resource="cluster", resource_name=self._cluster_name
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=[cluster_arn])
        )
        assert function.role is not None
        eks.CfnAccessEntry(
            self._stack,
            f"{function.node.id}AccessEntry",
            cluster_name=self._cluster_name,
            principal_arn=function.role.role_arn,
            kubernetes_groups=[spec.kubernetes_group],
            type="STANDARD",
        )

    def _alarm_on(self, function: GpuDevFunction, spec: FunctionSpec) -> None:
        if spec.alarm_on_errors:
            self._alarms.when_positive(
                f"{spec.name}Errors",
                f"{spec.deployed_name} failed in the last 5 minutes",
                function.metric_errors(period=ALARM_PERIOD),
            )
        if spec.repairs_metric:
            self._alarms.when_positive(
                f"{spec.name}Repairs",
                f"{spec.deployed_name} repaired something the lifecycle left behind (its "
                "log says what): a tear down or a create job failed",
                cloudwatch.Metric(
                    namespace=METRICS_NAMESPACE,
                    metric_name=spec.repairs_metric,
                    dimensions_map={"service": spec.deployed_name},
                    statistic="Sum",
                    period=ALARM_PERIOD,
                ),
            )


def policy_statement(
    grant: ResourceGrant, cluster_name: str, shared_file_system: str = "off"
) -> iam.PolicyStatement:
    arn = {
        "partition": Aws.PARTITION,
        "region": Aws.REGION,
        "account": Aws.ACCOUNT_ID,
        "shared_file_system": shared_file_system,
    }
    conditions: dict[str, dict[str, str | list[str]]] = {}
    for operator, key, values in grant.conditions:
        named = [value.format(cluster=cluster_name) for value in values]
        conditions.setdefault(operator, {})[key] = named[0] if len(named) == 1 else named
    return iam.PolicyStatement(
        actions=list(grant.actions),
        resources=[resource.format(**arn) for resource in grant.resources],
        conditions=conditions or None,
    )


def context_environment(scope: Construct, spec: FunctionSpec) -> dict[str, str]:
    """The function's settings taken from CDK context, validated at synth."""
    values: dict[str, str] = {}
    for setting in spec.context_environment:
        raw = scope.node.try_get_context(setting.context_key)
        value = setting.default if raw is None else raw
        if isinstance(setting.default, str):  # an image reference and the like
            if not isinstance(value, str) or not value or value.split() != [value]:
                raise ValueError(f"context {setting.context_key}: one word; got {raw!r}")
            values[setting.variable] = value
            continue
        if isinstance(value, bool) or not str(value).strip().isdigit():
            raise ValueError(f"context {setting.context_key}: a whole number; got {raw!r}")
        if int(value) < setting.minimum:
            raise ValueError(
                f"context {setting.context_key}: at least {setting.minimum}; got {raw!r}"
            )
        values[setting.variable] = str(int(value))
    return values


def migrate_on_deploy(
    scope: Construct, functions: Mapping[str, lambda_.Function], database: rds.DatabaseCluster
) -> None:
    """Runs the migrations function after the database exists and whenever it changes, and
    before any other function is created or updated: new code may read a column or call a
    SQL function only its migration adds (migrations are additive, so the code still running
    meanwhile is safe on the new schema)."""
    migrate = functions[MIGRATE.name]
    triggers.Trigger(
        scope,
        "MigrateOnDeploy",
        handler=migrate,
        execute_after=[database],
        execute_before=[f for f in functions.values() if f is not migrate],
        execute_on_handler_change=True,
        timeout=Duration.minutes(5),
    )
