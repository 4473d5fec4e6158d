"""The public bus and the notifier in CDK (cdk_app/notifications.py): the bus `gpu-dev` with
PutEvents for the event relay only, the rule with its pattern and its Lambda target, the
notifier's asynchronous retries and dead-letter queue with its alarm, the KMS key split
between the API (encrypt) and the notifier (decrypt), and the sender's SES identity."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template

from cdk_app.declaration import EVENT_DETAIL_TYPES, EVENT_SOURCE


def _resources(template: Template, kind: str) -> dict[str, Any]:
    return template.find_resources(kind)


def _policies_with(template: Template, action: str) -> list[str]:
    """The roles whose inline policies allow `action`."""
    found = []
    for policy in _resources(template, "AWS::IAM::Policy").values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        actions = [
            a
            for s in statements
            for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        ]
        if action in actions:
            found += [role["Ref"] for role in policy["Properties"]["Roles"]]
    return found


def test_the_bus_is_named_gpu_dev_and_only_the_event_relay_puts_events_on_it(template: Template):
    template.has_resource_properties("AWS::Events::EventBus", {"Name": "gpu-dev"})
    roles = _policies_with(template, "events:PutEvents")
    assert len(roles) == 1 and roles[0].startswith("EventRelayFunction")
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "handler.handler",
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "POWERTOOLS_SERVICE_NAME": "gpudev-event-relay",
                        "EVENTS_EVENT_BUS_NAME": Match.any_value(),
                    }
                )
            },
        },
    )


def test_the_rule_matches_every_public_event_and_invokes_the_notifier(template: Template):
    rules = [
        r["Properties"]
        for r in _resources(template, "AWS::Events::Rule").values()
        if "EventPattern" in r["Properties"]
    ]
    (rule,) = rules
    assert rule["Name"] == "gpudev-notify"
    assert rule["EventPattern"] == {
        "source": [EVENT_SOURCE],
        "detail-type": list(EVENT_DETAIL_TYPES),
    }
    (target,) = rule["Targets"]
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 2
    assert "DeadLetterConfig" in target
    assert json.dumps(target["Arn"]).count("NotifierFunction") == 1


def test_the_notifier_retries_twice_then_dead_letters_with_an_alarm(template: Template):
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "MaximumRetryAttempts": 2,
            "MaximumEventAgeInSeconds": 6 * 3600,
            "DestinationConfig": {"OnFailure": {"Destination": Match.any_value()}},
        },
    )
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {"QueueName": "gpudev-notify-dlq", "SqsManagedSseEnabled": True},
    )
    alarms = [
        a["Properties"]
        for name, a in _resources(template, "AWS::CloudWatch::Alarm").items()
        if name.startswith("NotifyDeadLetters")
    ]
    (alarm,) = alarms
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["AlarmActions"]


def test_the_key_seals_for_the_api_and_opens_for_the_notifier_only(template: Template):
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    encrypters = _policies_with(template, "kms:Encrypt")
    decrypters = _policies_with(template, "kms:Decrypt")
    assert [r for r in encrypters if r.startswith("ApiFunction")]
    assert not [r for r in encrypters if r.startswith("NotifierFunction")]
    assert [r for r in decrypters if r.startswith("NotifierFunction")]
    assert not [r for r in decrypters if r.startswith("ApiFunction")]
    for function in ("gpudev-api", "gpudev-notifier"):
        template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "Environment": {
                    "Variables": Match.object_like(
                        {"POWERTOOLS_SERVICE_NAME": function, "NOTIFY_KEY_ID": Match.any_value()}
                    )
                }
            },
        )


def test_the_sender_is_an_ses_identity_and_only_the_notifier_sends(template: Template):
    template.has_resource_properties(
        "AWS::SES::EmailIdentity", {"EmailIdentity": "gpu-dev-notifications@example.com"}
    )
    senders = _policies_with(template, "ses:SendEmail")
    assert len(senders) == 1 and senders[0].startswith("NotifierFunction")
    creators = _policies_with(template, "ses:CreateEmailIdentity")
    assert len(creators) == 1 and creators[0].startswith("ApiFunction")
