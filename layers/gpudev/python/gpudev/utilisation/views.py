"""What the API answers about GPU use: the last clock hour per GPU of one reservation
(`show`), and the last 15 clock minutes of each of the caller's active reservations
(`list`'s GPU-use column). Times are clock minutes, as every duration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg

from gpudev.identity import Caller
from gpudev.repositories.utilisation import UtilisationRepository
from gpudev.settings import lifecycle_settings
from gpudev.usage_rows import GpuHoursUsed, GpuSecondsUsed
from gpudev.utilisation.schemas import (
    GpuSample,
    GpuUse,
    RecentUse,
    RecentUseList,
    ReservationUse,
)
from gpudev.utilisation_rows import GpuSampleRow

SHOW_CLOCK_MINUTES = 60
LIST_CLOCK_MINUTES = 15


def _since(clock_minutes: int) -> datetime:
    seconds = clock_minutes * lifecycle_settings().seconds_per_hour / 60
    return datetime.now(UTC) - timedelta(seconds=seconds)


def reservation_use(conn: psycopg.Connection[Any], reservation_id: UUID) -> ReservationUse:
    rows = UtilisationRepository(conn).samples_since(reservation_id, _since(SHOW_CLOCK_MINUTES))
    by_gpu: dict[str, list[GpuSampleRow]] = {}
    for row in rows:
        by_gpu.setdefault(row.gpu, []).append(row)
    gpus = [
        GpuUse(
            gpu=gpu,
            mean_util_percent=round(sum(s.util_percent for s in samples) / len(samples), 1),
            peak_util_percent=max(s.util_percent for s in samples),
            memory_used_mib=samples[-1].memory_used_mib,
            peak_memory_used_mib=max(s.memory_used_mib for s in samples),
            samples=[
                GpuSample(
                    at=s.sampled_at, util_percent=s.util_percent, memory_used_mib=s.memory_used_mib
                )
                for s in samples
            ],
        )
        for gpu, samples in by_gpu.items()
    ]
    return ReservationUse(reservation_id=reservation_id, minutes=SHOW_CLOCK_MINUTES, gpus=gpus)


def recent_use(conn: psycopg.Connection[Any], caller: Caller) -> RecentUseList:
    rows = UtilisationRepository(conn).recent_use(caller.username, _since(LIST_CLOCK_MINUTES))
    return RecentUseList(
        minutes=LIST_CLOCK_MINUTES,
        reservations=[RecentUse(**vars(row)) for row in rows],
    )


def used_gpu_hours(rows: list[GpuSecondsUsed]) -> list[GpuHoursUsed]:
    """`usage`: the rollups' seconds as clock GPU-hours, used beside sampled."""
    per_hour = lifecycle_settings().seconds_per_hour
    return [
        GpuHoursUsed(
            username=row.username,
            gpu_type=row.gpu_type,
            used_gpu_hours=round(row.busy_gpu_seconds / per_hour, 4),
            sampled_gpu_hours=round(row.sampled_gpu_seconds / per_hour, 4),
            mean_util_percent=None
            if row.mean_util_percent is None
            else round(row.mean_util_percent, 1),
        )
        for row in rows
    ]
