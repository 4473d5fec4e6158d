"""What the API takes and gives for disks: the requests the services accept and the view
users see."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from uuid import UUID

from pydantic import BaseModel, Field

from gpudev.models import Disk

MAX_SIZE_GB = 16384  # gp3's limit


class DiskRequest(BaseModel):
    disk_name: str = Field(min_length=1, max_length=50)
    size_gb: int | None = Field(default=None, ge=1, le=MAX_SIZE_GB)


class RenameRequest(BaseModel):
    new_name: str = Field(min_length=1, max_length=50)


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


class DiskContent(BaseModel):
    """The listing of a disk's contents recorded at its last snapshot, if any yet."""

    disk_name: str
    content_listing: str | None
    last_snapshot_at: datetime | None
    message: str

    @classmethod
    def of(cls, disk: Disk) -> DiskContent:
        if disk.content_listing is None:
            message = (
                "no listing yet: listings of a disk's contents are not recorded yet "
                "(planned: at the end of each reservation using it)"
            )
        else:
            message = f"contents as of the snapshot of {disk.last_snapshot_at}"
        return cls(
            disk_name=disk.disk_name,
            content_listing=disk.content_listing,
            last_snapshot_at=disk.last_snapshot_at,
            message=message,
        )


class DiskList(BaseModel):
    disks: list[DiskView]

    @classmethod
    def of(cls, disks: Iterable[Disk]) -> DiskList:
        return cls(disks=[DiskView.of(d) for d in disks])
