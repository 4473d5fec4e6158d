"""The usage reports' rows: what the usage repository returns and the API shows as they are.
Apart from the repository so that the API's response models need no psycopg at import."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel


class GpuHours(BaseModel):
    """GPU-hours one user held of one type on one UTC day."""

    username: str
    gpu_type: str
    day: date
    gpu_hours: float
    reservations: int


class QueueWait(BaseModel):
    """Submission to grant, in clock minutes, for one type's reservations submitted in the
    window; the percentiles are over the granted ones (None when none was granted)."""

    gpu_type: str
    granted: int
    still_waiting: int
    never_granted: int
    p50_minutes: float | None
    p90_minutes: float | None
    max_minutes: float | None


class Outcome(BaseModel):
    """Reservations that ended in the window with this status and reason."""

    outcome: str
    reason: str | None
    while_queued: bool  # ended before any grant: held no GPU
    reservations: int


class Utilisation(BaseModel):
    """One type's GPU-hours held against its GPU-hours of capacity (None: no capacity)."""

    gpu_type: str
    held_gpu_hours: float
    capacity_gpu_hours: float
    utilisation: float | None


class GpuHoursUsed(BaseModel):
    """One user's GPU-hours of one type the DCGM exporters saw busy (at or above the busy
    threshold), of those they sampled, and the mean utilisation (docs/utilisation.md)."""

    username: str
    gpu_type: str
    used_gpu_hours: float
    sampled_gpu_hours: float
    mean_util_percent: float | None


class GpuSecondsUsed(BaseModel):
    """The rollups' real seconds behind `GpuHoursUsed` (usage/report.sql)."""

    username: str
    gpu_type: str
    busy_gpu_seconds: float
    sampled_gpu_seconds: float
    mean_util_percent: float | None
