"""The API's answers about GPU use (no database import: the API's handler imports these)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field


class GpuSample(BaseModel):
    at: datetime
    util_percent: float
    memory_used_mib: float


class GpuUse(BaseModel):
    gpu: str = Field(description="<node>/<index>, as the node's DCGM exporter names it")
    mean_util_percent: float
    peak_util_percent: float
    memory_used_mib: float = Field(description="at the newest sample")
    peak_memory_used_mib: float
    samples: list[GpuSample]


class ReservationUse(BaseModel):
    reservation_id: UUID
    minutes: int = Field(description="the clock minutes the samples cover (the last hour)")
    gpus: list[GpuUse] = Field(description="empty: no sample yet (or no GPU)")


class RecentUse(BaseModel):
    reservation_id: UUID
    util_percent: float = Field(description="mean over its GPUs and the window's samples")
    gpus_seen: int


class RecentUseList(BaseModel):
    minutes: int
    reservations: list[RecentUse]
