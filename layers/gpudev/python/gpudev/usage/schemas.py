"""What the usage and operator routes give: the report (every figure in UTC; clients show
local time) and the operators' list of live reservations."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from gpudev.reservations.schemas import ReservationView
from gpudev.usage_rows import GpuHours, GpuHoursUsed, Outcome, QueueWait, Utilisation

UsageGrouping = Literal["user", "type", "day"]


class UsageTotal(BaseModel):
    key: str  # the username, GPU type or UTC day (YYYY-MM-DD) the row totals
    gpu_hours: float


class UsageReport(BaseModel):
    since: datetime
    until: datetime
    as_of: datetime = Field(description="live reservations are counted up to this instant")
    scope: str = Field(description="the caller's username, or 'everyone' for operators")
    by: UsageGrouping
    totals: list[UsageTotal]
    gpu_hours: list[GpuHours] = Field(description="by user, GPU type and UTC day")
    queue_waits: list[QueueWait]
    outcomes: list[Outcome]
    utilisation: list[Utilisation] = Field(description="everyone's report only")
    gpu_hours_used: list[GpuHoursUsed] = Field(
        default_factory=list,
        description="by user and GPU type: GPU-hours the DCGM exporters saw busy, beside "
        "gpu_hours held (whole UTC hours from since)",
    )


class ForceCancelRequest(BaseModel):
    # stripped first: a reason of spaces is no reason
    reason: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)
    ] = Field(description="recorded in the history")


class LiveReservations(BaseModel):
    reservations: list[ReservationView]
