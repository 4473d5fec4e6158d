"""The public event bus and what listens on it (docs/notifications.md): the bus `gpu-dev`,
its publishers' grants (the event relay: PutEvents on this bus only), and each declared
rule: its event pattern, its Lambda target invoked asynchronously with bounded retries, the
dead-letter queue both the rule's delivery and the function's failures end in, and the
alarm on that queue. Also the notifier's own: the KMS key the webhook URLs are sealed with
(the API may only encrypt, the notifier only decrypt) and the sender's SES identity."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_ses as ses
from aws_cdk import aws_sqs as sqs

from cdk_app.alarms import ALARM_PERIOD
from cdk_app.declaration import (
    EMAIL_IDENTITIES,
    NOTIFICATION_SENDER,
    NOTIFICATIONS_KEY_USES,
    NOTIFIER,
    BusRuleSpec,
    Deployment,
    EventBusSpec,
)
from cdk_app.functions import StackParts
from cdk_app.nag import acknowledge_dead_letter_target


def build_event_buses(parts: StackParts, deployment: Deployment) -> dict[str, events.EventBus]:
    """Every declared bus with its publishers' grants, then every rule on them."""
    buses = {spec.name: _bus(parts, spec, deployment) for spec in deployment.event_buses}
    for rule in deployment.bus_rules:
        _rule(parts, rule, buses[rule.bus])
    return buses


def build_notification_secrets(parts: StackParts) -> kms.Key:
    """The key that seals webhook URLs (rotated yearly), granted per use, and the sender's
    SES identity (from context `notificationSender`)."""
    key = kms.Key(
        parts.stack,
        "NotificationsKey",
        description="gpu-dev notification contacts: Slack webhook URLs, encrypted at rest",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,  # without it the saved webhooks cannot be read
    )
    for name, actions in NOTIFICATIONS_KEY_USES.items():
        function = parts.functions.get(name)
        if function is not None:
            key.grant(function, *actions)
            function.add_environment("NOTIFY_KEY_ID", key.key_arn)
    sender = parts.stack.node.try_get_context(NOTIFICATION_SENDER.context_key)
    address = str(sender or NOTIFICATION_SENDER.default)
    ses.EmailIdentity(parts.stack, "NotificationSender", identity=ses.Identity.email(address))
    notifier = parts.functions.get(NOTIFIER.name)
    if notifier is not None:  # mails only from the sender (to verified identities)
        identities = EMAIL_IDENTITIES.format(
            partition=Aws.PARTITION, region=Aws.REGION, account=Aws.ACCOUNT_ID
        )
        notifier.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ses:SendEmail"],
                resources=[identities],
                conditions={"StringEquals": {"ses:FromAddress": address}},
            )
        )
    CfnOutput(parts.stack, "NotificationsKeyArn", value=key.key_arn)
    return key


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
    acknowledge_dead_letter_target(dead_letters)
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
