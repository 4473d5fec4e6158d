"""A declared state machine (its ASL file with the functions' ARNs substituted, logs, X-Ray,
alarms on failed, timed out and aborted executions), and the grants of the functions that
start it, watch its executions or answer its task tokens."""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn

from cdk_app.alarms import ALARM_PERIOD
from cdk_app.declaration import Deployment, FunctionSpec, StateMachineSpec
from cdk_app.functions import StackParts


def build_state_machine(parts: StackParts, spec: StateMachineSpec) -> sfn.StateMachine:
    scope, functions, name = parts.stack, parts.functions, spec.name
    state_machine = sfn.StateMachine(
        scope,
        f"{name}StateMachine",
        state_machine_name=spec.deployed_name,
        definition_body=sfn.DefinitionBody.from_file(str(spec.definition_path)),
        definition_substitutions={
            placeholder: functions[function].function_arn
            for placeholder, function in spec.functions.items()
        },
        tracing_enabled=True,
        logs=sfn.LogOptions(
            destination=logs.LogGroup(
                scope,
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
        functions[function].grant_invoke(state_machine)
    for label, metric in (
        ("Failed", state_machine.metric_failed),
        ("TimedOut", state_machine.metric_timed_out),
        ("Aborted", state_machine.metric_aborted),
    ):
        parts.alarms.when_positive(
            f"{name}Executions{label}",
            f"{spec.deployed_name}: an execution ended {label} (a failed reservation, "
            "TearDownFailed, or StopExecution); the sweeper cleans up after it",
            metric(period=ALARM_PERIOD, statistic="Sum"),
        )
    return state_machine


def grant_state_machines(parts: StackParts, deployment: Deployment) -> None:
    """Starters and token senders, by ARNs built from the fixed names: referencing the
    state machine's token would make function → policy → state machine → function a
    CloudFormation cycle for the task function."""
    for machine in deployment.state_machines:
        machine_arn = parts.stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=machine.deployed_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        executions_arn = parts.stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{machine.deployed_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for spec in deployment.functions:
            function = parts.functions[spec.name]
            if machine.name in spec.starts or machine.name in spec.watches:
                function.add_environment(machine.arn_variable, machine_arn)
            for actions, resource in _grants(machine, spec, machine_arn, executions_arn):
                function.add_to_role_policy(
                    iam.PolicyStatement(actions=actions, resources=[resource])
                )


def _grants(
    machine: StateMachineSpec, spec: FunctionSpec, machine_arn: str, executions_arn: str
) -> list[tuple[list[str], str]]:
    """(actions, resource) pairs the function needs on the machine, in a fixed order."""
    grants: list[tuple[list[str], str]] = []
    if machine.name in spec.starts:
        grants.append((["states:StartExecution"], machine_arn))
    if machine.name in spec.watches:
        grants.append((["states:ListExecutions"], machine_arn))
        grants.append((["states:DescribeExecution"], executions_arn))
    if machine.name in spec.answers_tasks:
        grants.append((["states:SendTaskSuccess", "states:SendTaskFailure"], machine_arn))
        grants.append((["states:DescribeExecution"], executions_arn))
    return grants
