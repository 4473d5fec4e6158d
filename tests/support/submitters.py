"""The callers and the jobs queue of tests that submit reservations through the services."""

from __future__ import annotations

from collections.abc import Callable

from gpudev.errors import Unavailable
from gpudev.identity import caller_from_arn
from gpudev.jobs import AnyJob

ALICE = caller_from_arn("arn:aws:iam::123456789012:user/alice")
BOB = caller_from_arn("arn:aws:iam::123456789012:user/bob")
# Derives the username alice too, but is another principal.
IMPOSTOR = caller_from_arn("arn:aws:sts::123456789012:assumed-role/AnyRole/alice")


class RecordingQueue:
    """A jobs queue that keeps what it is sent (calling `on_send` first, if given)."""

    def __init__(self, on_send: Callable[[AnyJob], object] | None = None) -> None:
        self.sent: list[AnyJob] = []
        self._on_send = on_send

    def send(self, job: AnyJob) -> str:
        if self._on_send is not None:
            self._on_send(job)
        self.sent.append(job)
        return "message-id"

    @property
    def last(self) -> AnyJob:
        return self.sent[-1]


class RefusingQueue:
    """A jobs queue that refuses every job, counting the tries."""

    def __init__(self) -> None:
        self.tries = 0

    def send(self, job: AnyJob) -> str:
        self.tries += 1
        raise Unavailable("the jobs queue did not accept the request")
