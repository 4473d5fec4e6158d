"""The callers and the jobs queue of tests that submit reservations through the services."""

from __future__ import annotations

from gpudev.identity import caller_from_arn
from gpudev.jobs import AnyJob

ALICE = caller_from_arn("arn:aws:iam::123456789012:user/alice")
BOB = caller_from_arn("arn:aws:iam::123456789012:user/bob")
# Derives the username alice too, but is another principal.
IMPOSTOR = caller_from_arn("arn:aws:sts::123456789012:assumed-role/AnyRole/alice")


class RecordingQueue:
    """A jobs queue that keeps what it is sent."""

    def __init__(self) -> None:
        self.sent: list[AnyJob] = []

    def send(self, job: AnyJob) -> str:
        self.sent.append(job)
        return "message-id"
