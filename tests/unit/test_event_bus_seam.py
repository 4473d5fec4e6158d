"""Canary for localcloud/event_bus.py: moto's EventBridge matches a rule's pattern but skips
(in fact refuses) Lambda targets; the seam delivers matching events to our invoker, leaves
moto's own deliveries (SQS) alone, retries a failing function and dead-letters it after
the rule's retries, as Lambda's asynchronous invocation does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk_app.declaration import BusRuleSpec
from localcloud import event_bus
from localcloud.lambdas import Invocation
from tests.support.waiting import wait_for

RULE = BusRuleSpec("Notify", "Events", "gpu-dev", ("Reservation Active",), "Notifier", 2)
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:gpudev-notifier"


def test_moto_still_refuses_lambda_targets_without_the_seam():
    with mock_aws():
        events = _bus()
        with pytest.raises(Exception):  # noqa: B017 - NotImplementedError, as a 500
            events.put_events(Entries=[_entry("Reservation Active")])


class Recording:
    def __init__(self, fail: int = 0) -> None:
        self.events: list[Any] = []
        self.fail = fail

    def invoke(self, name: str, event: Any) -> Invocation:
        self.events.append((name, event))
        if len(self.events) <= self.fail:
            return Invocation({"errorMessage": "webhook answered 500"}, True, "r")
        return Invocation({"sent": 1}, False, "r")


@pytest.fixture
def cloud() -> Iterator[tuple[Any, Any, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName=RULE.dead_letter_queue_name)["QueueUrl"]
        yield _bus(), sqs, url


@contextmanager
def _started(lambdas: Recording, sqs: Any, url: str) -> Iterator[event_bus.AsyncInvoker]:
    invoker = event_bus.AsyncInvoker(
        (RULE,), {"gpudev-notifier": "Notifier"}, {RULE.name: url}, lambdas, sqs, 0.0001
    ).start()
    uninstall = event_bus.install(invoker.deliver)
    try:
        yield invoker
    finally:
        uninstall()
        invoker.signal_stop()


def test_a_matching_event_is_delivered_to_the_lambda_target_and_others_are_not(cloud):
    events, sqs, url = cloud
    lambdas = Recording()
    with _started(lambdas, sqs, url) as invoker:
        answer = events.put_events(
            Entries=[_entry("Reservation Active"), _entry("Reservation Queued")]
        )
        assert answer["FailedEntryCount"] == 0
        wait_for(lambda: invoker.delivered == 1, message="the matching event delivered")
        ((name, event),) = lambdas.events
        assert name == "Notifier"
        assert (event["source"], event["detail-type"]) == ("gpu-dev", "Reservation Active")
        assert event["detail"] == {"event_id": "r/active"}


def test_a_failing_target_is_retried_then_dead_lettered(cloud):
    events, sqs, url = cloud
    lambdas = Recording(fail=99)
    with _started(lambdas, sqs, url) as invoker:
        events.put_events(Entries=[_entry("Reservation Active")])
        wait_for(lambda: invoker.dead_lettered == 1, message="dead-lettered after the retries")
        assert len(lambdas.events) == 1 + RULE.retry_attempts
        (message,) = sqs.receive_message(QueueUrl=url)["Messages"]
        record = json.loads(message["Body"])
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["requestPayload"]["detail"] == {"event_id": "r/active"}


def test_a_target_that_fails_once_is_delivered_by_its_retry(cloud):
    events, sqs, url = cloud
    lambdas = Recording(fail=1)
    with _started(lambdas, sqs, url) as invoker:
        events.put_events(Entries=[_entry("Reservation Active")])
        wait_for(lambda: invoker.delivered == 1, message="delivered by the retry")
        assert invoker.dead_lettered == 0


def _bus() -> Any:
    events = boto3.client("events", region_name="us-east-1")
    events.create_event_bus(Name="gpu-dev")
    events.put_rule(
        Name=RULE.deployed_name,
        EventBusName="gpu-dev",
        EventPattern=json.dumps(RULE.event_pattern()),
    )
    events.put_targets(
        Rule=RULE.deployed_name, EventBusName="gpu-dev", Targets=[{"Id": "n", "Arn": FUNCTION}]
    )
    return events


def _entry(detail_type: str) -> dict[str, str]:
    return {
        "Source": "gpu-dev",
        "DetailType": detail_type,
        "Detail": json.dumps({"event_id": "r/active"}),
        "EventBusName": "gpu-dev",
    }
