"""The private seam in moto's SQS we rely on: a message's retention checked in constant time.

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
from collections.abc import Callable

from moto.core.utils import unix_time
from moto.sqs.models import Message, SQSBackend

EXPECTED_RETENTION_SIGNATURE = "(self, queue_name: str, message: moto.sqs.models.Message) -> bool"

_MOTO_RETENTION_CHECK = SQSBackend.is_message_valid_based_on_retention_period


def retention_seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_RETENTION_CHECK))


def _within_retention(self: SQSBackend, queue_name: str, message: Message) -> bool:
    queue = self.get_queue(queue_name)
    retention_seconds = int(queue.message_retention_period)  # type: ignore[attr-defined]
    return retention_seconds + message.sent_timestamp / 1000 > unix_time()  # type: ignore[operator]


def install() -> Callable[[], None]:
    """Check retention in constant time for the receives made from now on."""
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign]

    def uninstall() -> None:
        SQSBackend.is_message_valid_based_on_retention_period = _MOTO_RETENTION_CHECK  # type: ignore[method-assign]

    return uninstall
