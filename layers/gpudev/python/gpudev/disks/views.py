"""What users see of a disk."""

from __future__ import annotations

from datetime import date, datetime
from uuid import UUID

from pydantic import BaseModel

from gpudev.models import Disk


class DiskView(BaseModel):
    disk_name: str
    size_gb: int | None
    disk_size: str | None
    in_use: bool
    reservation_id: UUID | None
    is_deleted: bool
    delete_date: date | None
    snapshot_count: int
    is_backing_up: bool
    last_snapshot_at: datetime | None
    operation_id: UUID | None
    operation_status: str | None
    operation_error: str | None
    last_used: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, disk: Disk) -> DiskView:
        return cls.model_validate(disk.model_dump(include=set(cls.model_fields)))
