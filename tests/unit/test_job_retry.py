"""A failed job comes back after the fault-retry wait when the fault is transient, and at
once when it is permanent (gpudev/lifecycle/consumer.py `retry_later`), against moto's SQS:
the message is invisible for exactly that long, then received again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from moto import mock_aws

from gpudev.lifecycle.consumer import retry_later

REGION = "us-east-1"


@pytest.fixture
def queue() -> Iterator[tuple[Any, str, str]]:
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "180"})[
            "QueueUrl"
        ]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        yield sqs, url, arn


def _received(sqs: Any, url: str) -> list[dict[str, Any]]:
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])


def test_a_transient_failure_brings_the_job_back_after_the_fault_retry_wait(queue):
    sqs, url, arn = queue
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    [message] = _received(sqs, url)
    outage = psycopg.OperationalError("the database does not allow connections")
    assert retry_later(sqs, arn, message["ReceiptHandle"], outage, 1) == 1
    assert _received(sqs, url) == []  # not before the wait
    time.sleep(1.1)
    assert len(_received(sqs, url)) == 1  # not after the queue's 180 s either


def test_a_permanent_failure_brings_the_job_back_at_once_to_spend_its_receives(queue):
    sqs, url, arn = queue
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    [message] = _received(sqs, url)
    assert retry_later(sqs, arn, message["ReceiptHandle"], ValueError("bad job"), 120) == 0
    assert len(_received(sqs, url)) == 1
