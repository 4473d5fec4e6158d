from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.db.rows import fetch_all, fetch_one, fetch_returned
from gpudev.models import Disk
from gpudev.repositories.outbox import WithJob, fetch_with_job


class NewDisk(BaseModel):
    user_id: str
    disk_name: str
    size_gb: int | None = None
    ebs_volume_id: str | None = None


# A request recorded on a disk's row with its disk job.
DiskRequested = WithJob[Disk]


class DisksRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _request(self, name: str, params: dict[str, Any]) -> DiskRequested | None:
        """A request statement: the disk's row and its job, or None when the row was not
        changed."""
        return fetch_with_job(self._conn, name, Disk, params)

    def create(self, new: NewDisk) -> Disk:
        with domain_errors():
            return fetch_returned(self._conn, "disks/insert", Disk, new.model_dump())

    def get(self, user_id: str, disk_name: str) -> Disk | None:
        return fetch_one(
            self._conn, "disks/get", Disk, {"user_id": user_id, "disk_name": disk_name}
        )

    def list_for_user(self, user_id: str, include_deleted: bool = False) -> list[Disk]:
        return fetch_all(
            self._conn,
            "disks/list_for_user",
            Disk,
            {"user_id": user_id, "include_deleted": include_deleted},
        )

    def request_create(self, user_id: str, disk_name: str, size_gb: int | None) -> DiskRequested:
        """DiskNameTaken if the user has a disk of that name; Conflict if the name is still
        the `tagged_name` of another of the user's disks (migrations/0017)."""
        created = self._request(
            "disks/request_create",
            {"user_id": user_id, "disk_name": disk_name, "size_gb": size_gb},
        )
        assert created is not None, "an INSERT … RETURNING returns its row"
        return created

    def request_clone(self, user_id: str, source_name: str, disk_name: str) -> DiskRequested | None:
        """None if the source is gone, deleted or has no completed snapshot; DiskNameTaken
        if `disk_name` is taken, Conflict if it is still another disk's `tagged_name`."""
        return self._request(
            "disks/request_clone",
            {"user_id": user_id, "source_name": source_name, "disk_name": disk_name},
        )

    def request_delete(self, user_id: str, disk_name: str) -> DiskRequested | None:
        """None if the disk is gone, already deleted or in use."""
        return self._request("disks/request_delete", {"user_id": user_id, "disk_name": disk_name})

    def request_restore(self, user_id: str, disk_name: str) -> DiskRequested | None:
        """None if the disk is gone, not deleted or past its date."""
        return self._request("disks/request_restore", {"user_id": user_id, "disk_name": disk_name})

    def live_holder(self, user_id: str, disk_name: str) -> UUID | None:
        """The live reservation that names the disk, if any."""
        row = self._conn.execute(
            query("disks/live_holder"), {"user_id": user_id, "disk_name": disk_name}
        ).fetchone()
        return row[0] if row else None

    def rename(self, user_id: str, disk_name: str, new_name: str) -> DiskRequested | None:
        """None if the disk is gone, deleted or in use; DiskNameTaken if `new_name` is taken,
        Conflict if it is still the `tagged_name` of another disk (migrations/0017)."""
        return self._request(
            "disks/rename", {"user_id": user_id, "disk_name": disk_name, "new_name": new_name}
        )
