"""Idle reclaim, decided (pure): what one updater run saw of each active reservation's
GPUs → which reservations to warn, which to end, and whose idle clock restarts.

- Activity: any GPU of the reservation at or above `busy_percent`, or GPUs the run could
  not see (an exporter that did not answer, a pod it did not map): never reclaim what we
  did not look at. Activity restarts the idle clock and clears a warning.
- Idle for the reservation's timeout (clock minutes, from its last activity, its launch, or
  the moment its timeout was set) and past its first minutes: a warning.
- Still idle `grace_minutes` after the warning: the ending, "idle for 2 h"; the execution
  ends the reservation as expired through Tear down, disk saved as at any ending.
- The operator's policy for the GPU type: `always`, `when-waiting` (only while another
  reservation is queued for the type) or `never`. A reservation not eligible is never
  warned, and loses a warning it had.
- `--idle-timeout none` (no timeout): never.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from uuid import UUID

from gpudev.utilisation.timeout import describe_minutes
from gpudev.utilisation_rows import IdleCandidate, IdleChange


class Policy(StrEnum):
    ALWAYS = "always"
    WHEN_WAITING = "when-waiting"
    NEVER = "never"


class Seen(StrEnum):
    BUSY = "busy"
    IDLE = "idle"
    UNSEEN = "unseen"


def parse_policy(text: str) -> dict[str, Policy]:
    """`h100=when-waiting,*=always` → {"h100": WHEN_WAITING, "*": ALWAYS}; `*` defaults to
    always. A bad entry raises ValueError naming it (settings fail at first use)."""
    policies: dict[str, Policy] = {"*": Policy.ALWAYS}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        gpu_type, _, word = entry.partition("=")
        try:
            policies[gpu_type.strip().lower()] = Policy(word.strip())
        except ValueError:
            raise ValueError(
                f"idle reclaim policy {entry!r}: write type=always|when-waiting|never"
            ) from None
    return policies


@dataclass(frozen=True)
class IdleRules:
    seconds_per_hour: float
    grace_minutes: int
    first_minutes: int
    policies: Mapping[str, Policy] = field(default_factory=lambda: {"*": Policy.ALWAYS})

    def span(self, minutes: float) -> timedelta:
        return timedelta(seconds=minutes * self.seconds_per_hour / 60)

    def policy(self, gpu_type: str) -> Policy:
        return self.policies.get(gpu_type.lower(), self.policies.get("*", Policy.ALWAYS))


def plan_idle(
    candidates: Sequence[IdleCandidate],
    seen: Mapping[UUID, Seen],
    rules: IdleRules,
    now: datetime,
) -> list[IdleChange]:
    """The changes of this run, one per reservation at most; a reservation absent from
    `seen` counts as unseen."""
    changes = []
    for candidate in candidates:
        change = _judge(candidate, seen.get(candidate.reservation_id, Seen.UNSEEN), rules, now)
        if change is not None:
            changes.append(change)
    return changes


def _judge(c: IdleCandidate, seen: Seen, rules: IdleRules, now: datetime) -> IdleChange | None:
    if c.idle_ending is not None:
        return None  # recorded: the execution ends it (woken again each run)
    warned = c.idle_warned_at is not None
    if seen != Seen.IDLE:
        return IdleChange(c.reservation_id, active_at=now, clear_warning=warned)
    policy = rules.policy(c.gpu_type)
    eligible = c.idle_timeout_minutes is not None and (
        policy == Policy.ALWAYS or (policy == Policy.WHEN_WAITING and c.others_waiting)
    )
    if not eligible:
        return IdleChange(c.reservation_id, clear_warning=True) if warned else None
    assert c.idle_timeout_minutes is not None
    if now < c.launched_at + rules.span(rules.first_minutes):
        return None
    idle_since = max(c.launched_at, c.idle_active_at or c.launched_at)
    if not warned:
        if now - idle_since < rules.span(c.idle_timeout_minutes):
            return None
        ends_at = now + rules.span(rules.grace_minutes)
        return IdleChange(
            c.reservation_id,
            warning=warning_text(c.idle_timeout_minutes, rules.grace_minutes, ends_at),
            warned_at=now,
            ends_at=ends_at,
        )
    assert c.idle_warned_at is not None
    if now - c.idle_warned_at < rules.span(rules.grace_minutes):
        return None
    return IdleChange(c.reservation_id, ending=ending_reason(c.idle_timeout_minutes))


def warning_text(timeout_minutes: int, grace_minutes: int, ends_at: datetime) -> str:
    at = ends_at.astimezone(UTC).strftime("%H:%M UTC")
    return (
        f"idle: its GPUs have not been used for {describe_minutes(timeout_minutes)}; it ends "
        f"in {describe_minutes(grace_minutes)} (at {at}) unless they are used, its disk "
        "saved (`gpu-dev edit REF --idle-timeout none` keeps it)"
    )


def ending_reason(timeout_minutes: int) -> str:
    return f"idle for {describe_minutes(timeout_minutes)}"
