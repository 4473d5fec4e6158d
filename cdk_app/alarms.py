"""The stack's alarms: one SNS topic every alarm notifies, and one way to raise an alarm."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

ALARM_PERIOD = Duration.minutes(5)
ALARM_EMAIL_CONTEXT = "gpudev:alarmEmail"


class Alarms:
    """The topic (encrypted with a key CloudWatch may use); CDK context `gpudev:alarmEmail`
    subscribes an address to it. Its constructs sit on `scope` (the stack), so their logical
    ids are the stack's own."""

    def __init__(self, scope: Construct) -> None:
        self._scope = scope
        key = kms.Key(
            scope,
            "AlarmsKey",
            description="gpu-dev alarm notifications",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        self.topic = sns.Topic(
            scope,
            "Alarms",
            topic_name="gpudev-alarms",
            display_name="gpu-dev alarms",
            master_key=key,
            enforce_ssl=True,
        )
        email = scope.node.try_get_context(ALARM_EMAIL_CONTEXT)
        if email:
            self.topic.add_subscription(subscriptions.EmailSubscription(str(email)))
        CfnOutput(scope, "AlarmTopicArn", value=self.topic.topic_arn)

    def when_positive(
        self, construct_id: str, description: str, metric: cloudwatch.IMetric
    ) -> None:
        """Raised as soon as one period's value is above 0; no data is not a problem."""
        alarm = cloudwatch.Alarm(
            self._scope,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=0,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))
