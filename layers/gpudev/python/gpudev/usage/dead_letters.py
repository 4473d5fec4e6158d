"""The jobs that failed every receive: the dead-letter queue's depth and a peek at its
messages, for operators. A peek receives with `VisibilityTimeout=0`, so the messages stay
visible (their receive count goes up; nothing is deleted)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from gpudev.errors import Unavailable

PEEK_LIMIT = 10  # SQS returns at most 10 per receive


class DeadLetter(BaseModel):
    message_id: str
    sent_at: datetime | None
    receive_count: int
    body: Any  # the job as it was sent (JSON), or its text


class DeadLetters(BaseModel):
    depth: int  # ApproximateNumberOfMessages
    in_flight: int  # ApproximateNumberOfMessagesNotVisible
    messages: list[DeadLetter]


def peek_dead_letters(sqs: Any, queue_url: str) -> DeadLetters:
    if not queue_url:
        raise Unavailable("this deployment gives the API no dead-letter queue (JOBS_DLQ_URL)")
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    received = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=PEEK_LIMIT,
        VisibilityTimeout=0,
        WaitTimeSeconds=0,
        MessageSystemAttributeNames=["SentTimestamp", "ApproximateReceiveCount"],
    ).get("Messages", [])
    return DeadLetters(
        depth=int(attributes.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        messages=[_letter(m) for m in received],
    )


def _letter(message: dict[str, Any]) -> DeadLetter:
    system = message.get("Attributes", {})
    sent = system.get("SentTimestamp")
    try:
        body: Any = json.loads(message.get("Body", ""))
    except json.JSONDecodeError:
        body = message.get("Body", "")
    return DeadLetter(
        message_id=message["MessageId"],
        sent_at=datetime.fromtimestamp(int(sent) / 1000, UTC) if sent else None,
        receive_count=int(system.get("ApproximateReceiveCount", 0)),
        body=body,
    )
