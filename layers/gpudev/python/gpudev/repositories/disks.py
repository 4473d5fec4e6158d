from __future__ import annotations

from typing import Any

import psycopg
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.rows import fetch_all, fetch_one, fetch_returned
from gpudev.models import Disk


class NewDisk(BaseModel):
    user_id: str
    disk_name: str
    size_gb: int | None = None
    ebs_volume_id: str | None = None


class DisksRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

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

    def request_create(self, user_id: str, disk_name: str, size_gb: int | None) -> Disk:
        with domain_errors():
            return fetch_returned(
                self._conn,
                "disks/request_create",
                Disk,
                {"user_id": user_id, "disk_name": disk_name, "size_gb": size_gb},
            )

    def request_delete(self, user_id: str, disk_name: str) -> Disk | None:
        """None if the disk is gone, already deleted or in use."""
        return fetch_one(
            self._conn, "disks/request_delete", Disk, {"user_id": user_id, "disk_name": disk_name}
        )

    def rename(self, user_id: str, disk_name: str, new_name: str) -> Disk | None:
        """None if the disk is gone, deleted or in use; DiskNameTaken if `new_name` is."""
        with domain_errors():
            return fetch_one(
                self._conn,
                "disks/rename",
                Disk,
                {"user_id": user_id, "disk_name": disk_name, "new_name": new_name},
            )
