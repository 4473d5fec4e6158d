"""One clock for stopping the local cloud: every join and wait on the stop path takes what is
left of a shared budget, so the whole stop ends on time however many parts are busy."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Self

log = logging.getLogger("localcloud.stop")


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic()

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining(self, at_least: float = 0.0) -> float:
        return max(at_least, self.at - time.monotonic())

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at


def join_or_abandon(threads: Iterable[threading.Thread], deadline: Deadline) -> list[str]:
    """Join each thread until the deadline; the names of those still running, which are left
    to finish on their own (they are daemon threads and stop at their next check)."""
    abandoned = []
    for thread in threads:
        thread.join(timeout=deadline.remaining())
        if thread.is_alive():
            abandoned.append(thread.name)
    if abandoned:
        log.warning("abandoned, still busy: %s", ", ".join(abandoned))
    return abandoned


class BackgroundWork:
    """Daemon threads that run until `signal_stop`; `stop` joins them until a shared deadline.
    Subclasses add their threads with `_in_background` and loop on `self._stop`."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _in_background(self, target: Callable[..., None], name: str, *args: Any) -> None:
        self._threads.append(threading.Thread(target=target, args=args, name=name, daemon=True))

    def start(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def signal_stop(self) -> None:
        """Take no new work; work in hand finishes (or is abandoned at `stop`)."""
        self._stop.set()

    def stop(self, deadline: Deadline) -> None:
        self.signal_stop()
        join_or_abandon(self._threads, deadline)
