"""The public event bus and what listens on it (docs/notifications.md): the bus `gpu-dev`,
its publishers' grants (the event relay: PutEvents on this bus only), and each declared
rule: its event pattern, its Lambda target invoked asynchronously with bounded retries, the
dead-letter queue both the rule's delivery and the function's failures end in, and the
alarm on that queue."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs

from cdk_app.alarms import ALARM_PERIOD
from cdk_app.declaration import BusRuleSpec, Deployment, EventBusSpec
from cdk_app.functions import StackParts


def build_event_buses(parts: StackParts, deployment: Deployment) -> dict[str, events.EventBus]:
    """Every declared bus with its publishers' grants, then every rule on them."""
    buses = {spec.name: _bus(parts, spec, deployment) for spec in deployment.event_buses}
    for rule in deployment.bus_rules:
        _rule(parts, rule, buses[rule.bus])
    return buses


def _bus(parts: StackParts, spec: EventBusSpec, deployment: Deployment) -> events.EventBus:
    bus = events.EventBus(parts.stack, f"{spec.name}Bus", event_bus_name=spec.bus_name)
    CfnOutput(parts.stack, f"{spec.name}BusArn", value=bus.event_bus_arn)
    for publisher in deployment.functions:
        if spec.name in publisher.publishes_to:
            function = parts.functions[publisher.name]
            function.add_environment(spec.name_variable, bus.event_bus_name)
            bus.grant_put_events_to(function)
    return bus


def _rule(parts: StackParts, spec: BusRuleSpec, bus: events.EventBus) -> None:
    scope, function = parts.stack, parts.functions[spec.target]
    dead_letters = sqs.Queue(
        scope,
        f"{spec.name}DeadLetterQueue",
        queue_name=spec.dead_letter_queue_name,
        retention_period=Duration.days(14),
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
    )
    # The function's own failures, after Lambda's asynchronous retries (with its backoff).
    function.configure_async_invoke(
        retry_attempts=spec.retry_attempts,
        max_event_age=Duration.seconds(spec.max_event_age_seconds),
        on_failure=destinations.SqsDestination(dead_letters),
    )
    pattern = spec.event_pattern()
    events.Rule(
        scope,
        f"{spec.name}Rule",
        rule_name=spec.deployed_name,
        event_bus=bus,
        event_pattern=events.EventPattern(
            source=pattern["source"], detail_type=pattern["detail-type"]
        ),
        # A delivery EventBridge itself could not make (the function throttled or gone).
        targets=[
            targets.LambdaFunction(
                function,
                dead_letter_queue=dead_letters,
                retry_attempts=spec.retry_attempts,
                max_event_age=Duration.seconds(spec.max_event_age_seconds),
            )
        ],
    )
    parts.alarms.when_positive(
        f"{spec.name}DeadLetters",
        f"{dead_letters.queue_name} holds events {function.function_name} failed after its "
        "retries (docs/notifications.md, 'Operating the notifier')",
        dead_letters.metric_approximate_number_of_messages_visible(
            period=ALARM_PERIOD, statistic="Maximum"
        ),
    )
    CfnOutput(scope, f"{spec.name}DeadLetterQueueUrl", value=dead_letters.queue_url)
