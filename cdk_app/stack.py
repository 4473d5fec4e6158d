"""The gpu-dev stack: network, Aurora PostgreSQL, the shared layer, and everything the
deployment declaration (cdk_app/declaration.py) lists: functions, the REST API, queues,
state machines and schedules. The local cloud renders the same declaration onto moto."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, Aws, CfnOutput, Duration, RemovalPolicy, Stack, Token, triggers
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_eks as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk_app.access import ApiAccess
from cdk_app.dashboard import build_dashboard
from cdk_app.declaration import (
    ALLOCATOR,
    AVAILABILITY_UPDATER,
    DEPLOYMENT,
    DISK_PURGE,
    DISK_RECONCILER,
    METRICS_NAMESPACE,
    MIGRATE,
    SWEEPER,
    Deployment,
    FunctionSpec,
    QueueSpec,
    ResourceGrant,
    StateMachineSpec,
)
from cdk_app.function import GpuDevFunction
from cdk_app.layer_bundling import layer_bundling, migrations_digest
from cdk_app.nag import acknowledge_public_route
from cdk_app.network import build_network
from cdk_app.paths import CA_BUNDLE_CONTEXT, LAYER_DIR, RDS_CA_BUNDLE

DATABASE_NAME = "gpudev"
ALARM_PERIOD = Duration.minutes(5)


class GpuDevStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        deployment: Deployment = DEPLOYMENT,
        **kwargs: object,
    ):
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # The EKS cluster the dev pods run on is managed outside this stack.
        self.cluster_name = str(
            self.node.try_get_context("eksClusterName") or "pytorch-gpu-dev-cluster"
        )
        self.access = ApiAccess.from_context(self)
        self._network()
        self._database()
        self._alarm_topic()
        self.layer = lambda_.LayerVersion(
            self,
            "SharedLayer",
            code=lambda_.Code.from_asset(
                str(LAYER_DIR),
                bundling=layer_bundling(
                    Path(self.node.try_get_context(CA_BUNDLE_CONTEXT) or RDS_CA_BUNDLE)
                ),
            ),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="gpudev package, its pinned runtime dependencies and migrations/",
        )
        self.functions = {spec.name: self._function(spec) for spec in deployment.functions}
        self._migrate_on_deploy()
        self._rest_api(deployment)
        self.dead_letter_queues = [self._queue(queue, deployment) for queue in deployment.queues]
        self.state_machines = [self._state_machine(spec) for spec in deployment.state_machines]
        self._state_machine_grants(deployment)
        for schedule in deployment.schedules:
            events.Rule(
                self,
                f"{schedule.name}Schedule",
                schedule=events.Schedule.expression(schedule.expression),
                targets=[targets.LambdaFunction(self.functions[schedule.target])],
            )
        build_dashboard(
            self,
            rest_api=self.rest_api,
            functions={
                spec.deployed_name: self.functions[spec.name] for spec in deployment.functions
            },
            state_machines=self.state_machines,
            dead_letter_queues=self.dead_letter_queues,
            allocator=ALLOCATOR.deployed_name,
            availability_updater=AVAILABILITY_UPDATER.deployed_name,
            reconcilers=[spec.deployed_name for spec in (DISK_RECONCILER, DISK_PURGE, SWEEPER)],
        )

    def _alarm_topic(self) -> None:
        """Every alarm notifies one SNS topic (encrypted with a key CloudWatch may use);
        CDK context `gpudev:alarmEmail` subscribes an address to it."""
        key = kms.Key(
            self,
            "AlarmsKey",
            description="gpu-dev alarm notifications",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        self.alarm_topic = sns.Topic(
            self,
            "Alarms",
            topic_name="gpudev-alarms",
            display_name="gpu-dev alarms",
            master_key=key,
            enforce_ssl=True,
        )
        email = self.node.try_get_context("gpudev:alarmEmail")
        if email:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(str(email)))
        CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)

    def _alarm(self, construct_id: str, description: str, metric: cloudwatch.IMetric) -> None:
        """Raised as soon as one period's value is above 0; no data is not a problem."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=0,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.alarm_topic))

    def _network(self) -> None:
        network = build_network(self)
        self.vpc = network.vpc
        self.function_subnets = network.function_subnets
        self.database_subnets = network.database_subnets
        self.functions_security_group = network.functions_security_group

    def _database(self) -> None:
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
            vpc_subnets=self.database_subnets,
            storage_encrypted=True,
            iam_authentication=True,
            deletion_protection=True,
            backup=rds.BackupProps(retention=Duration.days(14)),
            removal_policy=RemovalPolicy.SNAPSHOT,
        )
        self.database.connections.allow_default_port_from(
            self.functions_security_group, "gpu-dev functions"
        )

    def _function(self, spec: FunctionSpec) -> GpuDevFunction:
        secret = self.database.secret
        assert secret is not None
        environment: dict[str, str] = {}
        access = spec.database
        if spec.uses_database:
            if access is None:
                raise ValueError(
                    f"{spec.name} uses the database: declare its role and limits "
                    "(database=DatabaseAccess(...) in cdk_app/declaration.py)"
                )
            environment = {"DB_NAME": DATABASE_NAME, **access.environment()}
            if access.login_user:  # IAM database authentication as its group's login role
                environment["DB_HOST"] = self.database.cluster_endpoint.hostname
                environment["DB_PORT"] = Token.as_string(self.database.cluster_endpoint.port)
            else:  # the migrations: the master user, owner of the schema
                environment["DB_SECRET_ARN"] = secret.secret_arn
        if spec.uses_cluster:
            environment["EKS_CLUSTER_NAME"] = self.cluster_name
        environment.update(self._context_environment(spec))
        if spec.name == MIGRATE.name:
            # A new set of migrations is a new function version, which re-runs the trigger.
            environment["MIGRATIONS_SHA256"] = migrations_digest()
        function = GpuDevFunction(
            self,
            spec,
            layer=self.layer,
            environment=environment,
            vpc=self.vpc if spec.uses_database else None,
            vpc_subnets=self.function_subnets,
            security_groups=[self.functions_security_group] if spec.uses_database else None,
        )
        if spec.uses_database and access is not None:
            if access.login_user:
                # rds-db:connect on dbuser:<cluster resource id>/<login role>, nothing else
                self.database.grant_connect(function, access.login_user)
            else:
                secret.grant_read(function)
        if spec.describe_actions:
            function.add_to_role_policy(
                iam.PolicyStatement(actions=list(spec.describe_actions), resources=["*"])
            )
        for grant in spec.grants:
            function.add_to_role_policy(self._statement(grant))
        if spec.uses_cluster:
            self._grant_cluster_access(function, spec)
        if spec.alarm_on_errors:
            self._alarm(
                f"{spec.name}Errors",
                f"{spec.deployed_name} failed in the last 5 minutes",
                function.metric_errors(period=ALARM_PERIOD),
            )
        if spec.repairs_metric:
            self._alarm(
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
        return function

    def _statement(self, grant: ResourceGrant) -> iam.PolicyStatement:
        arn = {"partition": Aws.PARTITION, "region": Aws.REGION, "account": Aws.ACCOUNT_ID}
        conditions: dict[str, dict[str, str | list[str]]] = {}
        for operator, key, values in grant.conditions:
            conditions.setdefault(operator, {})[key] = values[0] if len(values) == 1 else [*values]
        return iam.PolicyStatement(
            actions=list(grant.actions),
            resources=[resource.format(**arn) for resource in grant.resources],
            conditions=conditions or None,
        )

    def _context_environment(self, spec: FunctionSpec) -> dict[str, str]:
        """The function's settings taken from CDK context, validated at synth."""
        values: dict[str, str] = {}
        for setting in spec.context_environment:
            raw = self.node.try_get_context(setting.context_key)
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

    def _grant_cluster_access(self, function: GpuDevFunction, spec: FunctionSpec) -> None:
        """eks:DescribeCluster on our cluster, and a Kubernetes identity for the role: its
        group (bound by deploy/kubernetes/rbac.yaml: readers list nodes and pods; the
        lifecycle also manages pods, services, config maps and secrets in gpu-dev)."""
        cluster_arn = self.format_arn(
            service="eks", resource="cluster", resource_name=self.cluster_name
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=[cluster_arn])
        )
        assert function.role is not None
        eks.CfnAccessEntry(
            self,
            f"{function.node.id}AccessEntry",
            cluster_name=self.cluster_name,
            principal_arn=function.role.role_arn,
            kubernetes_groups=[spec.kubernetes_group],
            type="STANDARD",
        )

    def _migrate_on_deploy(self) -> None:
        triggers.Trigger(
            self,
            "MigrateOnDeploy",
            handler=self.functions[MIGRATE.name],
            execute_after=[self.database],
            execute_on_handler_change=True,
            timeout=Duration.minutes(5),
        )

    def _rest_api(self, deployment: Deployment) -> None:
        access_logs = logs.LogGroup(
            self,
            "ApiAccessLogs",
            retention=logs.RetentionDays.THREE_MONTHS,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.rest_api = apigateway.RestApi(
            self,
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
            policy=self.access.resource_policy(deployment.api.public_routes),
        )
        api_function = self.functions[deployment.api.function]
        for name, value in self.access.environment().items():
            api_function.add_environment(name, value)
        integration = apigateway.LambdaIntegration(api_function)
        # A public route's resource carries only its public methods: API Gateway answers any
        # other method there 403 "Missing Authentication Token" (no fallback to the proxy).
        for method, path in deployment.api.public_routes:
            acknowledge_public_route(
                self.rest_api.root.resource_for_path(path).add_method(
                    method, integration, authorization_type=apigateway.AuthorizationType.NONE
                )
            )
        self.rest_api.root.add_proxy(default_integration=integration, any_method=True)

    def _queue(self, spec: QueueSpec, deployment: Deployment) -> sqs.Queue:
        """The queue, its dead-letter queue (returned) and the alarm on it."""
        name = spec.name
        dead_letters = sqs.Queue(
            self,
            f"{name}DeadLetterQueue",
            queue_name=f"{spec.deployed_name}-dlq",
            retention_period=Duration.days(14),
            enforce_ssl=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
        )
        queue = sqs.Queue(
            self,
            f"{name}Queue",
            queue_name=spec.deployed_name,
            visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=dead_letters, max_receive_count=spec.max_receive_count
            ),
            enforce_ssl=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
        )
        self._alarm(
            f"{name}DeadLetters",
            f"{dead_letters.queue_name} holds messages: jobs that failed {spec.max_receive_count} "
            "times (docs/architecture.md, 'Dead letters': inspect and redrive)",
            dead_letters.metric_approximate_number_of_messages_visible(
                period=ALARM_PERIOD, statistic="Maximum"
            ),
        )
        CfnOutput(self, f"{name}DeadLetterQueueUrl", value=dead_letters.queue_url)
        CfnOutput(self, f"{name}DeadLetterQueueArn", value=dead_letters.queue_arn)
        CfnOutput(self, f"{name}QueueArn", value=queue.queue_arn)
        if spec.consumer:
            self.functions[spec.consumer].add_event_source(
                event_sources.SqsEventSource(
                    queue, batch_size=spec.batch_size, report_batch_item_failures=True
                )
            )
        for sender in deployment.functions:
            if spec.name in sender.sends_to:
                function = self.functions[sender.name]
                function.add_environment(spec.url_variable, queue.queue_url)
                queue.grant_send_messages(function)
            if spec.name in sender.reads_dead_letters:
                function = self.functions[sender.name]
                function.add_environment(spec.dead_letter_url_variable, dead_letters.queue_url)
                dead_letters.grant(function, "sqs:GetQueueAttributes", "sqs:ReceiveMessage")
        return dead_letters

    def _state_machine(self, spec: StateMachineSpec) -> sfn.StateMachine:
        name = spec.name
        state_machine = sfn.StateMachine(
            self,
            f"{name}StateMachine",
            state_machine_name=spec.deployed_name,
            definition_body=sfn.DefinitionBody.from_file(str(spec.definition_path)),
            definition_substitutions={
                placeholder: self.functions[function].function_arn
                for placeholder, function in spec.functions.items()
            },
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=logs.LogGroup(
                    self,
                    f"{name}StateMachineLogs",
                    retention=logs.RetentionDays.THREE_MONTHS,
                    removal_policy=RemovalPolicy.DESTROY,
                ),
                # Every event (state entered/exited, task scheduled/failed, timings) but no
                # execution data: inputs, outputs and parameters hold task tokens. The
                # console's execution history comes from Step Functions, not these logs.
                level=sfn.LogLevel.ALL,
                include_execution_data=False,
            ),
        )
        for function in set(spec.functions.values()):
            self.functions[function].grant_invoke(state_machine)
        for label, metric in (
            ("Failed", state_machine.metric_failed),
            ("TimedOut", state_machine.metric_timed_out),
            ("Aborted", state_machine.metric_aborted),
        ):
            self._alarm(
                f"{name}Executions{label}",
                f"{spec.deployed_name}: an execution ended {label} (a failed reservation, "
                "TearDownFailed, or StopExecution); the sweeper cleans up after it",
                metric(period=ALARM_PERIOD, statistic="Sum"),
            )
        return state_machine

    def _state_machine_grants(self, deployment: Deployment) -> None:
        """Starters and token senders, by ARNs built from the fixed names: referencing the
        state machine's token would make function → policy → state machine → function a
        CloudFormation cycle for the task function."""
        for machine in deployment.state_machines:
            machine_arn = self.format_arn(
                service="states",
                resource="stateMachine",
                resource_name=machine.deployed_name,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            executions_arn = self.format_arn(
                service="states",
                resource="execution",
                resource_name=f"{machine.deployed_name}:*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for spec in deployment.functions:
                function = self.functions[spec.name]
                if machine.name in spec.starts:
                    function.add_environment(machine.arn_variable, machine_arn)
                    function.add_to_role_policy(
                        iam.PolicyStatement(
                            actions=["states:StartExecution"], resources=[machine_arn]
                        )
                    )
                if machine.name in spec.watches:
                    function.add_environment(machine.arn_variable, machine_arn)
                    function.add_to_role_policy(
                        iam.PolicyStatement(
                            actions=["states:ListExecutions"], resources=[machine_arn]
                        )
                    )
                    function.add_to_role_policy(
                        iam.PolicyStatement(
                            actions=["states:DescribeExecution"], resources=[executions_arn]
                        )
                    )
                if machine.name in spec.answers_tasks:
                    function.add_to_role_policy(
                        iam.PolicyStatement(
                            actions=["states:SendTaskSuccess", "states:SendTaskFailure"],
                            resources=[machine_arn],
                        )
                    )
                    function.add_to_role_policy(
                        iam.PolicyStatement(
                            actions=["states:DescribeExecution"], resources=[executions_arn]
                        )
                    )
