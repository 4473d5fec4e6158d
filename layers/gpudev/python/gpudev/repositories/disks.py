from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import class_row
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
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
        with domain_errors(), self._conn.cursor(row_factory=class_row(Disk)) as cur:
            row = cur.execute(query("disks/insert"), new.model_dump()).fetchone()
        assert row is not None
        return row

    def get(self, user_id: str, disk_name: str) -> Disk | None:
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(
                query("disks/get"), {"user_id": user_id, "disk_name": disk_name}
            ).fetchone()

    def list_for_user(self, user_id: str, include_deleted: bool = False) -> list[Disk]:
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(
                query("disks/list_for_user"),
                {"user_id": user_id, "include_deleted": include_deleted},
            ).fetchall()

    def request_create(self, user_id: str, disk_name: str, size_gb: int | None) -> Disk:
        with domain_errors(), self._conn.cursor(row_factory=class_row(Disk)) as cur:
            row = cur.execute(
                query("disks/request_create"),
                {"user_id": user_id, "disk_name": disk_name, "size_gb": size_gb},
            ).fetchone()
        assert row is not None
        return row

    def request_delete(self, user_id: str, disk_name: str) -> Disk | None:
        """None if the disk is gone, already deleted or in use."""
        with self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(
                query("disks/request_delete"), {"user_id": user_id, "disk_name": disk_name}
            ).fetchone()

    def rename(self, user_id: str, disk_name: str, new_name: str) -> Disk | None:
        """None if the disk is gone, deleted or in use; DiskNameTaken if `new_name` is."""
        with domain_errors(), self._conn.cursor(row_factory=class_row(Disk)) as cur:
            return cur.execute(
                query("disks/rename"),
                {"user_id": user_id, "disk_name": disk_name, "new_name": new_name},
            ).fetchone()
