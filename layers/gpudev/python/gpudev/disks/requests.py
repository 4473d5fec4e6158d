"""Disk requests from the API: each is recorded on the disk's row and queued as a job in one
transaction; the disk lifecycle (volumes, snapshots) acts on the job. Another user's disk is
never found (404), a disk marked for deletion is gone (410), one in use is a conflict (409).
Each request first loads the caller's bound user row (`bound_user`): another principal
deriving the same username is refused (403) before anything is read or written."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.disks.schemas import DiskRequest, RenameRequest
from gpudev.errors import Conflict, Gone, NotFound
from gpudev.identity import Caller
from gpudev.jobs import DiskJob, JobQueue
from gpudev.models import Disk
from gpudev.repositories import DisksRepository
from gpudev.reservations.rules import check_disk_name


def _job(disk: Disk, operation: str, previous_name: str | None = None) -> DiskJob:
    assert disk.operation_id is not None
    return DiskJob(
        operation=operation,  # type: ignore[arg-type]
        operation_id=disk.operation_id,
        disk_id=disk.disk_id,
        user_id=disk.user_id,
        disk_name=disk.disk_name,
        previous_name=previous_name,
    )


def caller_disks(conn: psycopg.Connection[Any], caller: Caller) -> list[Disk]:
    bound_user(conn, caller)
    return DisksRepository(conn).list_for_user(caller.username)


def find_disk(conn: psycopg.Connection[Any], caller: Caller, name: str) -> Disk:
    bound_user(conn, caller)
    disk = DisksRepository(conn).get(caller.username, name)
    if disk is None:
        raise NotFound(f"no disk named {name!r}")
    return disk


def _usable(disk: Disk, action: str) -> None:
    if disk.is_deleted:
        raise Gone(f"disk {disk.disk_name!r} is marked for deletion on {disk.delete_date}")
    if disk.in_use:
        holder = str(disk.reservation_id)[:8] if disk.reservation_id else "a reservation"
        raise Conflict(f"cannot {action} disk {disk.disk_name!r}: it is in use by {holder}")


def create_disk(
    conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, request: DiskRequest
) -> Disk:
    check_disk_name(request.disk_name)
    with conn.transaction():
        bound_user(conn, caller)
        disk = DisksRepository(conn).request_create(
            caller.username, request.disk_name, request.size_gb
        )
        queue.send(_job(disk, "create"))
    return disk


def delete_disk(conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, name: str) -> Disk:
    disk = find_disk(conn, caller, name)
    _usable(disk, "delete")
    with conn.transaction():
        deleted = DisksRepository(conn).request_delete(caller.username, name)
        if deleted is None:
            raise Conflict(f"disk {name!r} changed meanwhile; look at it again")
        queue.send(_job(deleted, "delete"))
    return deleted


def rename_disk(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    name: str,
    request: RenameRequest,
) -> Disk:
    check_disk_name(request.new_name)
    disk = find_disk(conn, caller, name)
    _usable(disk, "rename")
    with conn.transaction():
        renamed = DisksRepository(conn).rename(caller.username, name, request.new_name)
        if renamed is None:
            raise Conflict(f"disk {name!r} changed meanwhile; look at it again")
        queue.send(_job(renamed, "rename", previous_name=name))
    return renamed
