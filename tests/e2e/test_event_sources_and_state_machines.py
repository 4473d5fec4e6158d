"""moto runs our ASL with in-process Lambda tasks; SQS batches and schedules reach their
functions with Lambda's semantics."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from localcloud.stack import LocalCloud
from tests.e2e.fixtures.recorded import EVENTS


def wait_for(condition: Callable[[], Any], timeout: float = 15, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s: {message}")


def _bodies_received() -> list[dict[str, Any]]:
    return [
        json.loads(record["body"]) for event in list(EVENTS) for record in event.get("Records", [])
    ]


def _execute(cloud: LocalCloud, payload: dict[str, Any]) -> dict[str, Any]:
    sfn = cloud.aws.client("stepfunctions")  # type: ignore[union-attr]
    arn = sfn.start_execution(
        stateMachineArn=cloud.resources.state_machine_arns["Double"],
        name=uuid.uuid4().hex,  # moto names an unnamed execution "None" (AWS: a UUID)
        input=json.dumps(payload),
    )["executionArn"]
    return wait_for(
        lambda: (d := sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and d,
        message="execution did not finish",
    )


def test_a_state_machine_from_the_same_asl_runs_our_handler_in_process(local_cloud):
    result = _execute(local_cloud, {"value": 21, "wait_seconds": 0})
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {"value": 42, "function": "gpudev-doubler"}


def test_a_named_handler_error_reaches_catch_like_in_lambda(local_cloud):
    result = _execute(local_cloud, {"value": 500, "wait_seconds": 0})
    assert result["status"] == "FAILED"
    assert result["error"] == "ValueTooLarge"


def test_sqs_messages_reach_the_consumer_in_batches_and_are_deleted(local_cloud):
    sqs = local_cloud.aws.client("sqs")
    url = local_cloud.resources.queue_urls["TestJobs"]
    marker = time.time_ns()
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": str(i), "MessageBody": json.dumps({"n": i, "m": marker})} for i in range(7)
        ],
    )
    wait_for(
        lambda: len([b for b in _bodies_received() if b.get("m") == marker]) == 7,
        message="7 messages delivered",
    )
    batches = [
        e
        for e in list(EVENTS)
        if any(json.loads(r["body"]).get("m") == marker for r in e.get("Records", []))
    ]
    assert all(len(batch["Records"]) <= 5 for batch in batches), "batch size honoured"
    assert batches[0]["Records"][0]["eventSource"] == "aws:sqs"
    wait_for(lambda: _visible_and_inflight(sqs, url) == 0, message="queue emptied")


def _visible_and_inflight(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


@pytest.mark.parametrize("failure", ["fail", "crash"])
def test_failed_messages_are_retried_then_moved_to_the_dead_letter_queue(local_cloud, failure):
    sqs = local_cloud.aws.client("sqs")
    url = local_cloud.resources.queue_urls["TestJobs"]
    dlq = local_cloud.resources.dead_letter_queue_urls["TestJobs"]
    marker = time.time_ns()
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({failure: True, "m": marker}))
    if failure == "fail":
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"ok": True, "m": marker}))

    def in_dead_letter_queue() -> list[dict[str, Any]]:
        messages = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
        return [m for m in messages if json.loads(m["Body"]).get("m") == marker]

    dead = wait_for(in_dead_letter_queue, timeout=20, message="message reached the DLQ")
    assert [json.loads(m["Body"]) for m in dead] == [{failure: True, "m": marker}]
    deliveries = [b for b in _bodies_received() if b.get("m") == marker and failure in b]
    assert len(deliveries) == 2, "delivered maxReceiveCount times before the DLQ"
    if failure == "fail":
        ok = [b for b in _bodies_received() if b.get("m") == marker and "ok" in b]
        assert len(ok) == 1, "a partial batch failure retries only the failed message"


def test_the_ticker_fires_schedules_with_a_scheduled_event(local_cloud):
    rule_arn = local_cloud.resources.rule_arns["TestTick"]
    fired = wait_for(
        lambda: [e for e in list(EVENTS) if e.get("detail-type") == "Scheduled Event"],
        message="a scheduled event",
    )
    assert fired[0]["source"] == "aws.events"
    assert fired[0]["resources"] == [rule_arn]
    events = local_cloud.aws.client("events")
    rule = events.describe_rule(Name="gpudev-testtick")
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
