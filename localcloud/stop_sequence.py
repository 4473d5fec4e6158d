"""The local cloud's stop: steps registered as the start goes, run last-registered first,
each timed, all within one budget.

Ctrl+C: the whole stop ends within STOP_BUDGET_SECONDS. Work in flight (handlers in event
sources) gets DRAIN_SECONDS of it to finish; what is still running then is abandoned (daemon
threads), and the servers, the pool and PostgreSQL are stopped with what is left.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import ExitStack

from localcloud.deadline import Deadline

STOP_BUDGET_SECONDS = 8.0
DRAIN_SECONDS = 4.0
POSTGRES_STOP_SECONDS = 1.0  # at least, whatever is left of the budget: it is our child

log = logging.getLogger("localcloud.stop")


class StopSequence:
    def __init__(self) -> None:
        self._stack = ExitStack()
        # Set when run() begins; each step of the stop takes what is left of it.
        self.deadline = Deadline.after(STOP_BUDGET_SECONDS)
        self.drain_deadline = self.deadline
        self._signals: list[Callable[[], None]] = []  # ask workers to stop, without waiting
        self.times: list[tuple[str, float]] = []  # (step, seconds) of the last stop

    def add(self, step: str, stop: Callable[[], object]) -> None:
        """Register a step of the stop (run last-registered first), timed."""

        def timed() -> None:
            began = time.monotonic()
            try:
                stop()
            finally:
                self.times.append((step, time.monotonic() - began))

        self._stack.callback(timed)

    def add_signal(self, signal_stop: Callable[[], None]) -> None:
        """Register what asks a worker to stop; all are asked at once, before any step."""
        self._signals.append(signal_stop)

    def drained(self, stop: Callable[[Deadline], None]) -> Callable[[], None]:
        """A worker's stop, given the drain deadline of the stop in progress."""
        return lambda: stop(self.drain_deadline)

    def run(
        self, budget_seconds: float, first: Callable[[], None], last: Callable[[], None]
    ) -> float:
        """Run the stop: `first`, the workers' signals, every step, and `last` whatever
        happened; the seconds it took."""
        began = time.monotonic()
        self.deadline = Deadline(began + budget_seconds)
        self.drain_deadline = Deadline(min(self.deadline.at, began + DRAIN_SECONDS))
        self.times = []
        first()
        for signal_stop in self._signals:  # all at once: their work winds down together
            signal_stop()
        try:
            self._stack.close()
        finally:
            last()
            took = time.monotonic() - began
            steps = ", ".join(f"{step} {seconds:.2f}" for step, seconds in self.times)
            log.info("stopped in %.2f s (%s)", took, steps)
        return took
