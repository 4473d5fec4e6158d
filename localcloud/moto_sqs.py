"""The private seams in moto's SQS we rely on: a queue safe for receives and deletes at once,
and a message's retention checked in constant time.

moto's `ReceiveMessage` marks the messages it delivers, and its delete rebuilds the queue's
list and set of them, with no lock: with our five pollers (event_sources.py) a receive and a
delete at once could deliver a message twice, drop one, or fail with "Set changed size during
iteration" (reproduced by the cold review). Receives and deletes now hold one lock, which a
long poll lets go of while it waits for messages (so a delete never waits for a poll, and a
send still wakes it at once).

moto's `ReceiveMessage` checks each message it delivers against the queue's retention period
by asking for that one attribute through `get_queue_attributes`, which builds every attribute
of the queue three times over, and three of them (the approximate counts) walk every message
the queue holds: a receive of 10 messages from a queue holding 50 made ~90 walks. That was
about a seventh of the cloud process's interpreter under bench/api_load.py, in the process
the gateway shares; SQS has no such cost. The replacement reads the queue's retention period
and answers exactly as moto does (a message is valid until `sent + retention`). moto is pinned
exactly and tests/unit/test_moto_seam.py fails loudly if the method moves or changes shape.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from moto.core.utils import unix_time
from moto.sqs.models import Message, Queue, SQSBackend

EXPECTED_RETENTION_SIGNATURE = "(self, queue_name: str, message: moto.sqs.models.Message) -> bool"

EXPECTED_RECEIVE_SIGNATURE = (
    "(self, queue_name: str, count: int, wait_seconds_timeout: int, visibility_timeout: int,"
    " message_attribute_names: list[str] | None = None) -> list[moto.sqs.models.Message]"
)

_MOTO_RETENTION_CHECK = SQSBackend.is_message_valid_based_on_retention_period
_MOTO_RECEIVE = SQSBackend.receive_message
_MOTO_WAIT = Queue.wait_for_messages
_MOTO_DELETE = Queue.delete_message
_queues = threading.RLock()  # held by a receive (but not while it waits) or a delete


def receive_seam_signatures() -> list[str]:
    """moto's own receive, its wait and the queue's delete, as it defines them."""
    return [
        str(inspect.signature(_MOTO_RECEIVE)),
        str(inspect.signature(_MOTO_WAIT)),
        str(inspect.signature(_MOTO_DELETE)),
    ]


def _receive_message(self: SQSBackend, *args: Any, **kwargs: Any) -> list[Message]:
    with _queues:
        return _MOTO_RECEIVE(self, *args, **kwargs)


def _wait_for_messages(self: Queue, timeout: int) -> None:
    _queues.release()  # only a receive waits, holding the lock: wait without it
    try:
        _MOTO_WAIT(self, timeout)
    finally:
        _queues.acquire()


def _delete_message(self: Queue, receipt_handle: str) -> None:
    with _queues:
        _MOTO_DELETE(self, receipt_handle)


def retention_seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_RETENTION_CHECK))


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    queue = self.get_queue(queue_name)
    retention_seconds = int(queue.message_retention_period)  # type: ignore[attr-defined]
    return retention_seconds + message.sent_timestamp / 1000 > unix_time()  # type: ignore[operator]


def install() -> Callable[[], None]:
    """Receives and deletes one at a time, and retention checked in constant time, from now."""
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]
    SQSBackend.receive_message = _receive_message  # type: ignore[method-assign]
    Queue.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]
    Queue.delete_message = _delete_message  # type: ignore[method-assign]

    def uninstall() -> None:
        SQSBackend.is_message_valid_based_on_retention_period = _MOTO_RETENTION_CHECK  # type: ignore[method-assign]
        SQSBackend.receive_message = _MOTO_RECEIVE  # type: ignore[method-assign]
        Queue.wait_for_messages = _MOTO_WAIT  # type: ignore[method-assign]
        Queue.delete_message = _MOTO_DELETE  # type: ignore[method-assign]

    return uninstall
