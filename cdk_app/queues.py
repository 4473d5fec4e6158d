"""A declared queue: encrypted, with its dead-letter queue and the alarm on it, its consumer's
event source, and its senders' (and dead-letter readers') URLs and grants."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

from cdk_app.alarms import ALARM_PERIOD
from cdk_app.declaration import Deployment, QueueSpec
from cdk_app.functions import StackParts


def build_queue(parts: StackParts, spec: QueueSpec, deployment: Deployment) -> sqs.Queue:
    """The queue, its dead-letter queue (returned) and the alarm on it."""
    scope, functions, name = parts.stack, parts.functions, spec.name
    dead_letters = sqs.Queue(
        scope,
        f"{name}DeadLetterQueue",
        queue_name=f"{spec.deployed_name}-dlq",
        retention_period=Duration.days(14),
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
    )
    queue = sqs.Queue(
        scope,
        f"{name}Queue",
        queue_name=spec.deployed_name,
        visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
        dead_letter_queue=sqs.DeadLetterQueue(
            queue=dead_letters, max_receive_count=spec.max_receive_count
        ),
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
    )
    parts.alarms.when_positive(
        f"{name}DeadLetters",
        f"{dead_letters.queue_name} holds messages: jobs that failed {spec.max_receive_count} "
        "times (docs/architecture.md, 'Dead letters': inspect and redrive)",
        dead_letters.metric_approximate_number_of_messages_visible(
            period=ALARM_PERIOD, statistic="Maximum"
        ),
    )
    CfnOutput(scope, f"{name}DeadLetterQueueUrl", value=dead_letters.queue_url)
    CfnOutput(scope, f"{name}DeadLetterQueueArn", value=dead_letters.queue_arn)
    CfnOutput(scope, f"{name}QueueArn", value=queue.queue_arn)
    if spec.consumer:
        functions[spec.consumer].add_event_source(
            event_sources.SqsEventSource(
                queue,
                batch_size=spec.batch_size,
                report_batch_item_failures=True,
                max_concurrency=spec.max_concurrency,
            )
        )
    for sender in deployment.functions:
        if spec.name in sender.sends_to:
            function = functions[sender.name]
            function.add_environment(spec.url_variable, queue.queue_url)
            queue.grant_send_messages(function)
        if spec.name in sender.reads_dead_letters:
            function = functions[sender.name]
            function.add_environment(spec.dead_letter_url_variable, dead_letters.queue_url)
            dead_letters.grant(function, "sqs:GetQueueAttributes", "sqs:ReceiveMessage")
    return dead_letters
