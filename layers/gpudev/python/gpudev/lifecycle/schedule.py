"""When an active reservation expires, which warnings are due, and how long it parks until
the next checkpoint: pure arithmetic on the clock, no I/O.

Times are epoch seconds and `now` is always passed in (the tasks read it from their
injected clock). Durations are in clock hours: one lasts `seconds_per_hour` real seconds
(3600 in AWS; the local cloud and tests compress it). The checkpoint task applies what
`check` returns; `tests/unit/test_schedule.py` covers the boundaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpudev.settings import LifecycleSettings

# An expiry later than the recorded one by more than this is an extension (the database
# stores microseconds; float seconds round-trip with a little noise).
EXTENSION_EPSILON_SECONDS = 0.5


@dataclass(frozen=True)
class Active:
    """What the row says about an active reservation."""

    short_id: str  # the first 8 characters of its id, as users type it
    launched_at: float
    duration_hours: float  # in total, extensions included
    recorded_expiry: float | None  # what the last checkpoint applied
    warnings_sent: tuple[int, ...]  # since the last extension, in minutes before expiry
    warning_text: str | None  # on show since the last warning


@dataclass(frozen=True)
class Due:
    """What a checkpoint finds: expiry due, or what to show and how long to park."""

    expires_at: float
    expired: bool
    warnings_sent: tuple[int, ...] = ()  # all sent once this checkpoint is applied
    warning_level: int | None = None  # the nearest warning sent, in minutes
    warning_text: str | None = None  # to show now (None: none)
    park_seconds: int = 0  # until the next warning or the expiry


@dataclass(frozen=True)
class Schedule:
    seconds_per_hour: float
    warning_minutes: tuple[int, ...] = (30, 15, 5)

    @classmethod
    def of(cls, settings: LifecycleSettings) -> Schedule:
        return cls(settings.seconds_per_hour, tuple(settings.warning_minutes))

    def minutes(self, minutes: float) -> float:
        """Clock minutes in real seconds."""
        return minutes * self.seconds_per_hour / 60

    def expires_at(self, launched_at: float, duration_hours: float) -> float:
        return launched_at + duration_hours * self.seconds_per_hour

    def check(self, active: Active, now: float) -> Due:
        expires = self.expires_at(active.launched_at, active.duration_hours)
        if now >= expires:
            return Due(expires, expired=True)
        # An extension moved the expiry: its warnings start over.
        extended = active.recorded_expiry is not None and expires > (
            active.recorded_expiry + EXTENSION_EPSILON_SECONDS
        )
        sent = () if extended else active.warnings_sent
        minutes_left = (expires - now) / self.minutes(1)
        due = tuple(m for m in self.warning_minutes if minutes_left <= m and m not in sent)
        sent = (*sent, *due)
        text: str | None = None
        if due:
            text = warning_text(active.short_id, minutes_left)
        elif not extended:  # the last warning stays on show, unless an extension ended it
            text = active.warning_text
        upcoming = [
            expires - self.minutes(m)
            for m in self.warning_minutes
            if m not in sent and expires - self.minutes(m) > now
        ]
        next_at = min([*upcoming, expires])
        return Due(
            expires,
            expired=False,
            warnings_sent=sent,
            warning_level=min(sent) if sent else None,
            warning_text=text or None,
            park_seconds=max(1, math.ceil(next_at - now)),
        )


def warning_text(short_id: str, minutes_left: float) -> str:
    """The banner and `wall` message in the pod, sharper as the expiry nears."""
    minutes = max(0, math.floor(minutes_left))
    if minutes < 1:
        return f"URGENT: reservation {short_id} expires in less than a minute. Save your work now!"
    if minutes_left <= 5:
        return f"WARNING: reservation {short_id} expires in {minutes} minutes. Save your work!"
    if minutes_left <= 15:
        return (
            f"NOTICE: reservation {short_id} expires in {minutes} minutes. Please save your work."
        )
    return (
        f"INFO: reservation {short_id} expires in {minutes} minutes "
        f"(gpu-dev extend {short_id} -h 1 for more time)."
    )
