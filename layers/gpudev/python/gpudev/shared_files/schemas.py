"""What the API gives for the shares: the caller's shares with the personal share's usage
(`gpu-dev disk list`) and a reservation's mounts (`gpu-dev show`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel


class FileSystemUsage(BaseModel):
    """EFS's metered size of the whole file system (every user's share and the team's):
    EFS meters no access point alone. Eventually consistent: exact only after a couple of
    hours without writes."""

    file_system_id: str
    metered_bytes: int
    metered_at: datetime | None
    scope: Literal["file system"] = "file system"


class PersonalShareView(BaseModel):
    mount_path: str
    # None until the user's first reservation makes it
    access_point_id: str | None
    usage: FileSystemUsage | None  # None when EFS did not answer


class TeamShareView(BaseModel):
    mount_path: str
    mode: Literal["ro", "rw"]


class ShareList(BaseModel):
    personal: PersonalShareView | None  # None: the deployment has no shared file system
    team: TeamShareView | None  # None: no team share


class MountView(BaseModel):
    path: str
    what: Literal["named disk", "pod disk", "personal share", "team share", "node disk"]
    nodes: Literal["node 0", "every node"]
    mode: Literal["ro", "rw"]
    disk_name: str | None = None  # the named disk's
    access_point_id: str | None = None  # the personal share's, once made


class MountList(BaseModel):
    reservation_id: str
    mounts: list[MountView]
