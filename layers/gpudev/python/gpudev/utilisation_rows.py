"""The utilisation rows: what idle reclaim reads and decides, and what the utilisation
repository writes and returns (`repositories/utilisation.py`, `sql/utilisation/`). Apart
from both so that the repository and the rules share them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID


@dataclass(frozen=True)
class IdleCandidate:
    """An active reservation as idle reclaim reads it (utilisation/candidates.sql)."""

    reservation_id: UUID
    gpu_type: str
    launched_at: datetime
    task_token: str | None
    idle_timeout_minutes: int | None
    idle_active_at: datetime | None
    idle_warning: str | None
    idle_warned_at: datetime | None
    idle_ending: str | None
    others_waiting: bool


@dataclass(frozen=True)
class IdleChange:
    """What to write for one reservation: `active_at` restarts its idle clock; `warning`
    (with `warned_at`, and `ends_at`: when it ends unless used) is sent, or cleared when
    `clear_warning`; `ending` ends it."""

    reservation_id: UUID
    active_at: datetime | None = None
    warning: str | None = None
    warned_at: datetime | None = None
    ends_at: datetime | None = None
    clear_warning: bool = False
    ending: str | None = None


@dataclass(frozen=True)
class Sample:
    reservation_id: UUID
    gpu: str
    util_percent: float
    memory_used_mib: float


@dataclass(frozen=True)
class SamplesRecorded:
    samples: int
    pruned: int


@dataclass(frozen=True)
class IdleRecorded:
    reservation_id: UUID
    task_token: str | None
    idle_ending: str | None
    warning_changed: bool


@dataclass(frozen=True)
class GpuSampleRow:
    """One sample of one GPU (`utilisation/recent.sql`)."""

    gpu: str
    sampled_at: datetime
    util_percent: float
    memory_used_mib: float


@dataclass(frozen=True)
class RecentUseRow:
    """One active reservation's mean use over a window (`utilisation/recent_use.sql`)."""

    reservation_id: UUID
    util_percent: float
    gpus_seen: int
