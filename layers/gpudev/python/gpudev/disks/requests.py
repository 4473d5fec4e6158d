"""Disk requests from the API: each is recorded on the disk's row with its job in the outbox
by one statement, committed, then the job is sent (gpudev/outbox.py, as for reservations):
give the writes a connection in autocommit mode (`autocommit_connection()`), so their
`conn.transaction()` is the commit. A refused send is not an error: the request is saved and
the sweeper's relay sends the job. The disk lifecycle (volumes, snapshots) acts on the job.
Another user's disk is never found (404), a disk marked for deletion is gone (410), one in
use (held by a reservation, or named by a live one) is a conflict (409) naming the holder.
A disk marked for deletion can be restored before its date; its name stays taken until
the purge, and a create of that name says so.
Each request first loads the caller's bound user row (`bound_user`): another principal
deriving the same username is refused (403) before anything is read or written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.disks.schemas import CloneRequest, DiskContent, DiskRequest, RenameRequest
from gpudev.errors import Conflict, DiskNameTaken, Gone, NotFound, shown
from gpudev.identity import Caller
from gpudev.jobs import JobQueue
from gpudev.models import Disk
from gpudev.outbox import commit_then_send, send_after_commit
from gpudev.repositories import DisksRepository, UsersRepository
from gpudev.repositories.disks import DiskRequested
from gpudev.reservations.rules import check_disk_name


def caller_disks(conn: psycopg.Connection[Any], caller: Caller) -> list[Disk]:
    bound_user(conn, caller)
    return DisksRepository(conn).list_for_user(caller.username)


def find_disk(conn: psycopg.Connection[Any], caller: Caller, name: str) -> Disk:
    bound_user(conn, caller)
    disk = DisksRepository(conn).get(caller.username, name)
    if disk is None:
        raise NotFound(f"no disk named {shown(name)}")
    return disk


def _deleted(disk: Disk) -> str:
    return (
        f"disk {disk.disk_name!r} is marked for deletion on {disk.delete_date}: restore it "
        f"with `gpu-dev disk restore {disk.disk_name}`"
    )


# Why a request statement matched no disk, from (conn, caller, disk name): read only then,
# so an accepted request takes the bound user row, the statement and, after commit, the
# outbox delete.
Refusal = Callable[[psycopg.Connection[Any], Caller, str], Exception]


def _refused(action: str) -> Refusal:
    """The refusal of a delete or a rename: the disk is gone, deleted or in use."""

    def refusal(conn: psycopg.Connection[Any], caller: Caller, name: str) -> Exception:
        disks = DisksRepository(conn)
        disk = disks.get(caller.username, name)
        if disk is None:
            return NotFound(f"no disk named {shown(name)}")
        if disk.is_deleted:
            return Gone(_deleted(disk))
        holder = disk.reservation_id if disk.in_use else disks.live_holder(caller.username, name)
        if disk.in_use or holder is not None:
            by = f"reservation {str(holder)[:8]}" if holder else "a reservation"
            return Conflict(f"cannot {action} disk {shown(name)}: it is in use by {by}")
        return Conflict(f"disk {shown(name)} changed meanwhile; look at it again")

    return refusal


def _restore_refused(conn: psycopg.Connection[Any], caller: Caller, name: str) -> Exception:
    disk = DisksRepository(conn).get(caller.username, name)
    if disk is None:
        return NotFound(f"no disk named {shown(name)}")
    if not disk.is_deleted:
        return Conflict(f"disk {shown(name)} is not marked for deletion")
    return Gone(
        f"disk {shown(name)} reached its deletion date ({disk.delete_date}): its snapshots are "
        "being purged and it cannot be restored"
    )


def _clone_refused(conn: psycopg.Connection[Any], caller: Caller, name: str) -> Exception:
    disk = DisksRepository(conn).get(caller.username, name)
    if disk is None:
        return NotFound(f"no disk named {shown(name)}")
    if disk.is_deleted:
        return Gone(_deleted(disk))
    return Conflict(
        f"disk {shown(name)} has no completed snapshot yet: a disk is snapshotted at the end "
        "of each reservation using it; clone it after one"
    )


def disk_content(conn: psycopg.Connection[Any], caller: Caller, name: str) -> DiskContent:
    disk = find_disk(conn, caller, name)
    if disk.is_deleted:
        raise Gone(_deleted(disk))
    return DiskContent.of(disk)


def create_disk(
    conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, request: DiskRequest
) -> Disk:
    check_disk_name(request.disk_name)
    try:
        with conn.transaction():
            bound_user(conn, caller)
            created = DisksRepository(conn).request_create(
                caller.username, request.disk_name, request.size_gb
            )
    except DiskNameTaken:
        taken = DisksRepository(conn).get(caller.username, request.disk_name)
        if taken is not None and taken.is_deleted:
            raise DiskNameTaken(
                f"you have a disk named {shown(request.disk_name)} marked for deletion on "
                f"{taken.delete_date}: restore it with `gpu-dev disk restore "
                f"{request.disk_name}`, or choose another name"
            ) from None
        raise
    send_after_commit(conn, queue, created.job)
    return created.row


def _request(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    name: str,
    request: Callable[[DisksRepository, str, str], DiskRequested | None],
    refusal: Refusal,
) -> Disk:
    """One request on the caller's disk `name`: its statement (`request(disks, user, name)`:
    row and job) after the caller's request lock and bound user, committed, then the job
    sent; no row → `refusal`, read in the same transaction."""

    def write() -> DiskRequested | None:
        # The caller's request lock, as a submit takes it: a submit naming this disk and this
        # request never both pass their checks (docs/architecture.md, "Persistent disks").
        UsersRepository(conn).take_request_lock(caller.username)
        bound_user(conn, caller)
        return request(DisksRepository(conn), caller.username, name)

    def refused() -> Disk:
        raise refusal(conn, caller, name)

    return commit_then_send(conn, queue, write, refused)


def delete_disk(conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, name: str) -> Disk:
    return _request(conn, queue, caller, name, DisksRepository.request_delete, _refused("delete"))


def rename_disk(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    name: str,
    request: RenameRequest,
) -> Disk:
    check_disk_name(request.new_name)

    def rename(disks: DisksRepository, user_id: str, disk_name: str) -> DiskRequested | None:
        return disks.rename(user_id, disk_name, request.new_name)

    return _request(conn, queue, caller, name, rename, _refused("rename"))


def restore_disk(conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, name: str) -> Disk:
    """Undelete, before the disk's date; its job removes the snapshots' deletion tags."""
    return _request(conn, queue, caller, name, DisksRepository.request_restore, _restore_refused)


def clone_disk(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    name: str,
    request: CloneRequest,
) -> Disk:
    """A new disk `request.new_name` from the caller's disk `name`: recorded at once (the
    name taken), its job copies `name`'s latest completed snapshot as the new disk's
    (gpudev/disks/clone.py), which its first reservation restores from. A taken name raises
    DiskNameTaken (409) and rolls back, so no refusal leaves a row or a job."""
    check_disk_name(request.new_name)

    def clone(disks: DisksRepository, user_id: str, disk_name: str) -> DiskRequested | None:
        return disks.request_clone(user_id, disk_name, request.new_name)

    return _request(conn, queue, caller, name, clone, _clone_refused)
