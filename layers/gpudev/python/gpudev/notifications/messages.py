"""Each public event in the user's words: an e-mail subject and a text (the Slack post is the
text). Every message names the reservation (its name, or its id when it has none) and its
id; "active" has the line to connect with, "ended" why it ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpudev.events.catalogue import ACTIVE, ENDED, HEALTH, IDLE, QUEUED, WARNING


class EventDetail(BaseModel):
    """An event's detail (schema version 1, gpudev/events/reservation-event.v1.schema.json):
    what the notifier reads of it."""

    model_config = ConfigDict(extra="allow")

    version: str
    event_id: str
    reservation_id: str
    reservation_name: str | None = None
    user_id: str
    gpu_type: str
    gpu_count: int
    status: str
    queue_position: int | None = None
    estimated_wait_minutes: int | None = None
    ssh_command: str | None = None
    expires_at: datetime | None = None
    minutes_left: int | None = None
    ending: str | None = None
    reason: str | None = None
    warning: str | None = None
    idle_minutes: int | None = None
    ends_at: datetime | None = None


class BusEvent(BaseModel):
    """The EventBridge event a rule delivers to the notifier."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    source: str
    detail_type: str = Field(alias="detail-type")
    detail: EventDetail


KIND_OF = {QUEUED: "queued", ACTIVE: "active", WARNING: "warning", ENDED: "ended", HEALTH: "health"}
# The idle warning is a warning to the user's preferences (`--events warning`); it has no
# expiry level, so `--warnings` does not filter it.
KIND_OF[IDLE] = "warning"


@dataclass(frozen=True)
class Message:
    subject: str
    text: str


def message_for(event: BusEvent) -> Message:
    d = event.detail
    short_id = d.reservation_id[:8]
    name = d.reservation_name or short_id
    gpus = f"{d.gpu_count} × {d.gpu_type.upper()}"
    about = f"Your reservation {name} ({d.reservation_id}, {gpus})"
    kind = KIND_OF.get(event.detail_type)
    if kind == "queued":
        wait = (
            f", about {_duration(d.estimated_wait_minutes)} to wait"
            if d.estimated_wait_minutes is not None
            else ""
        )
        return Message(
            f"gpu-dev: {name} is queued (#{d.queue_position})",
            f"{about} is waiting for GPUs: #{d.queue_position} in the queue{wait}. "
            "You will get a message when it starts.",
        )
    if kind == "active":
        return Message(
            f"gpu-dev: {name} is ready",
            f"{about} is ready until {_time(d.expires_at)}.\nConnect: {d.ssh_command}",
        )
    if event.detail_type == IDLE:
        return Message(
            f"gpu-dev: {name} is idle and ends at {_clock(d.ends_at)}",
            f"{about}: your GPUs have been idle for {_duration(d.idle_minutes)}; "
            f"the reservation ends at {_clock(d.ends_at)} unless they are used. "
            f"Its disk is saved. To keep it idle: gpu-dev edit {short_id} --idle-timeout none",
        )
    if kind == "warning":
        return Message(
            f"gpu-dev: {name} expires in {_duration(d.minutes_left)}",
            f"{about} expires at {_time(d.expires_at)}, in {_duration(d.minutes_left)}. "
            f"Save your work, or give it more time: gpu-dev extend {short_id} --hours 1",
        )
    if kind == "ended":
        headline = {
            "expired": "expired",
            "cancelled": "was cancelled",
            "failed": "failed",
        }.get(d.ending or "", "ended")
        # An idle ending's reason is "expired: idle for 2 h": said once, not twice.
        reason = (d.reason or "").removeprefix(f"{d.ending}: ")
        return Message(f"gpu-dev: {name} {headline}", f"{about} {headline}: {reason}")
    if kind == "health":
        return Message(f"gpu-dev: {name} needs a look", f"{about}: {d.warning}")
    raise ValueError(f"no message for detail-type {event.detail_type!r}")


def _duration(minutes: Any) -> str:
    minutes = int(minutes or 0)
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def _clock(at: datetime | None) -> str:
    return at.strftime("%H:%M UTC") if at else "soon"


def _time(at: datetime | None) -> str:
    return at.strftime("%H:%M UTC on %d %b") if at else "its expiry"
