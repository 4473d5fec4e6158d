"""Renders the deployment declaration (cdk_app/declaration.py) onto moto, as CDK renders it
onto CloudFormation: Lambda functions (run in-process through the moto seam), queues with
their dead-letter queues, state machines from the same ASL files with local substitutions,
EventBridge rules (stored; the ticker fires them), and our event buses with their rules (moto
matches their patterns; localcloud/event_bus.py delivers to their Lambda targets)."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

from cdk_app.declaration import POD_LOG_GROUP, Deployment

ROLE_NAME = "gpudev-local-execution"


@dataclass
class DeployedResources:
    function_arns: dict[str, str] = field(default_factory=dict)  # spec name -> ARN
    queue_urls: dict[str, str] = field(default_factory=dict)  # spec name -> URL
    dead_letter_queue_urls: dict[str, str] = field(default_factory=dict)
    state_machine_arns: dict[str, str] = field(default_factory=dict)
    rule_arns: dict[str, str] = field(default_factory=dict)
    bus_names: dict[str, str] = field(default_factory=dict)  # EventBusSpec name -> bus name
    # BusRuleSpec name -> its dead-letter queue's URL
    bus_rule_dead_letter_urls: dict[str, str] = field(default_factory=dict)


def compress_retries(definition: str, scale: float) -> str:
    """The ASL with every Retry's waits scaled by `scale` (a compressed clock compresses
    them too; moto sleeps them in real time). ASL wants whole seconds of at least 1, so the
    first interval and the longest delay are each scaled and rounded up to 1 s."""
    if scale >= 1:
        return definition
    asl = json.loads(definition)

    def visit(states: dict[str, Any]) -> None:
        for state in states.values():
            for retrier in state.get("Retry", []):
                interval = retrier.get("IntervalSeconds", 1)
                longest = interval * retrier.get("BackoffRate", 2.0) ** max(
                    0, retrier.get("MaxAttempts", 3) - 1
                )
                longest = min(longest, retrier.get("MaxDelaySeconds", longest))
                retrier["IntervalSeconds"] = max(1, round(interval * scale))
                retrier["MaxDelaySeconds"] = max(1, round(longest * scale))
            for branch in state.get("Branches", []):
                visit(branch["States"])
            for key in ("Iterator", "ItemProcessor"):
                if key in state:
                    visit(state[key]["States"])

    visit(asl["States"])
    return json.dumps(asl)


def _placeholder_zip() -> bytes:
    # moto stores code; our handlers run from the working tree through the seam.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "# runs in-process from the working tree\n")
    return buffer.getvalue()


def deploy(deployment: Deployment, client: Any, retry_scale: float = 1.0) -> DeployedResources:
    """Create every declared resource; `client(service)` returns a moto-bound boto3 client;
    state machines' retry waits are scaled by `retry_scale` (the compressed clock)."""
    resources = DeployedResources()
    iam, lambda_ = client("iam"), client("lambda")
    role_arn = iam.create_role(
        RoleName=ROLE_NAME,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sts:AssumeRole",
                        "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                    }
                ],
            }
        ),
    )["Role"]["Arn"]
    code = _placeholder_zip()
    for spec in deployment.functions:
        created = lambda_.create_function(
            FunctionName=spec.deployed_name,
            Runtime="python3.12",
            Role=role_arn,
            Handler=spec.handler,
            Code={"ZipFile": code},
            Timeout=spec.timeout_seconds,
            MemorySize=spec.memory_mb,
            Architectures=["arm64"],
        )
        resources.function_arns[spec.name] = created["FunctionArn"]

    sqs = client("sqs")
    for queue in deployment.queues:
        dlq_url = sqs.create_queue(QueueName=f"{queue.deployed_name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        resources.dead_letter_queue_urls[queue.name] = dlq_url
        resources.queue_urls[queue.name] = sqs.create_queue(
            QueueName=queue.deployed_name,
            Attributes={
                "VisibilityTimeout": str(queue.visibility_timeout_seconds),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": queue.max_receive_count}
                ),
            },
        )["QueueUrl"]

    stepfunctions = client("stepfunctions")
    for machine in deployment.state_machines:
        resources.state_machine_arns[machine.name] = stepfunctions.create_state_machine(
            name=machine.deployed_name,
            definition=compress_retries(machine.render(resources.function_arns), retry_scale),
            roleArn=role_arn,
        )["stateMachineArn"]

    events = client("events")
    for schedule in deployment.schedules:
        rule_name = f"gpudev-{schedule.name.lower()}"
        resources.rule_arns[schedule.name] = events.put_rule(
            Name=rule_name, ScheduleExpression=schedule.expression, State="ENABLED"
        )["RuleArn"]
        events.put_targets(
            Rule=rule_name,
            Targets=[{"Id": schedule.target, "Arn": resources.function_arns[schedule.target]}],
        )
    # The dev pods' log group (cdk_app/logs.py): the kubelet's Fluent Bit writes to it.
    client("logs").create_log_group(logGroupName=POD_LOG_GROUP)
    for bus in deployment.event_buses:
        events.create_event_bus(Name=bus.bus_name)
        resources.bus_names[bus.name] = bus.bus_name
    for rule in deployment.bus_rules:
        bus_name = resources.bus_names[rule.bus]
        dlq_url = sqs.create_queue(QueueName=rule.dead_letter_queue_name)["QueueUrl"]
        resources.bus_rule_dead_letter_urls[rule.name] = dlq_url
        events.put_rule(
            Name=rule.deployed_name,
            EventBusName=bus_name,
            EventPattern=json.dumps(rule.event_pattern()),
            State="ENABLED",
        )
        events.put_targets(
            Rule=rule.deployed_name,
            EventBusName=bus_name,
            Targets=[{"Id": rule.target, "Arn": resources.function_arns[rule.target]}],
        )
    return resources
