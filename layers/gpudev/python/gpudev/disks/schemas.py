"""What the API takes and gives for disks: the requests the services accept and the view
users see."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field
from pydantic.config import JsonDict

from gpudev.models import Disk, DiskShown
from gpudev.reservations.rules import DISK_NAME

# The name's pattern is checked by rules.check_disk_name with a sentence of its own: stated
# in the schema only.
NAME: JsonDict = {"pattern": DISK_NAME.pattern}

MAX_SIZE_GB = 16384  # gp3's limit


class DiskRequest(BaseModel):
    disk_name: str = Field(min_length=1, max_length=50, json_schema_extra=NAME)
    size_gb: int | None = Field(default=None, ge=1, le=MAX_SIZE_GB)


class RenameRequest(BaseModel):
    new_name: str = Field(min_length=1, max_length=50, json_schema_extra=NAME)


class CloneRequest(BaseModel):
    new_name: str = Field(min_length=1, max_length=50, json_schema_extra=NAME)


# The columns of `DiskShown`, nothing else of the row (no docstring: it would become the
# schema's description in the OpenAPI document).
class DiskView(DiskShown):
    @classmethod
    def of(cls, disk: Disk) -> DiskView:
        return cls.model_validate(disk.model_dump(include=set(cls.model_fields)))


class DiskContent(BaseModel):
    """The listing of a disk's contents written by the last pod that mounted it, as it
    stopped (cluster/home_listing.py), and when."""

    disk_name: str
    content_listing: str | None
    content_listed_at: datetime | None
    message: str

    @classmethod
    def of(cls, disk: Disk) -> DiskContent:
        if disk.content_listed_at is None:
            message = "no listing yet: one is taken at the end of each reservation using it"
        else:
            message = (
                f"contents as of {disk.content_listed_at:%Y-%m-%d %H:%M} UTC (paths to depth 3,"
                " first 4000 bytes)"
            )
        return cls(
            disk_name=disk.disk_name,
            content_listing=disk.content_listing,
            content_listed_at=disk.content_listed_at,
            message=message,
        )


class DiskList(BaseModel):
    disks: list[DiskView]

    @classmethod
    def of(cls, disks: Iterable[Disk]) -> DiskList:
        return cls(disks=[DiskView.of(d) for d in disks])
