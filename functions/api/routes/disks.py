"""Named persistent disks: each change is recorded on the disk's row and queued as a job.

Each route imports its service when it runs: the services import the database driver and
the repositories, which the handler's import does not pay for (bench/cold_start.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.disks.schemas import (
    CloneRequest,
    DiskContent,
    DiskList,
    DiskRequest,
    DiskView,
    RenameRequest,
)
from gpudev.models import Disk
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import DiskName

router = Router()
# A route on one disk: not found (404), a state that does not allow the change or a change
# made meanwhile (409), deleted (410), a name outside its pattern (422).
ONE_DISK = (404, 409, 410, 422)


def _accepted(disk: Disk) -> Response[DiskView]:
    return Response(202, content_types.APPLICATION_JSON, DiskView.of(disk))


@router.post(
    "/v1/disks",
    responses=answers(
        202, DiskView, "recorded and queued: the volume is created", 409, 422, body=True
    ),
)
def create_user_disk(request: DiskRequest, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import create_disk

    return _accepted(caller.change(create_disk, request))


@router.get(
    "/v1/disks",
    responses=answers(200, DiskList, "the caller's disks"),
)
def list_disks(caller: ForCaller) -> DiskList:
    from gpudev.disks.requests import caller_disks

    return DiskList.of(caller.read(caller_disks))


@router.get(
    "/v1/disks/<disk_name>",
    responses=answers(200, DiskView, "the disk", 404, 410, 422),
)
def get_disk(disk_name: DiskName, caller: ForCaller) -> DiskView:
    from gpudev.disks.requests import find_disk

    return DiskView.of(caller.read(find_disk, disk_name))


@router.get(
    "/v1/disks/<disk_name>/content",
    responses=answers(
        200, DiskContent, "the listing of the disk's files as its last pod left them", 404, 410, 422
    ),
)
def get_disk_content(disk_name: DiskName, caller: ForCaller) -> DiskContent:
    from gpudev.disks.requests import disk_content

    return caller.read(disk_content, disk_name)


@router.delete(
    "/v1/disks/<disk_name>",
    responses=answers(202, DiskView, "recorded: the disk is marked for deletion", *ONE_DISK),
)
def delete_user_disk(disk_name: DiskName, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import delete_disk

    return _accepted(caller.change(delete_disk, disk_name))


@router.post(
    "/v1/disks/<disk_name>/rename",
    responses=answers(202, DiskView, "recorded: the disk is renamed", *ONE_DISK, body=True),
)
def rename_user_disk(
    disk_name: DiskName, request: RenameRequest, caller: ForCaller
) -> Response[DiskView]:
    from gpudev.disks.requests import rename_disk

    return _accepted(caller.change(rename_disk, disk_name, request))


@router.post(
    "/v1/disks/<disk_name>/restore",
    responses=answers(202, DiskView, "recorded: the disk's deletion is called off", *ONE_DISK),
)
def restore_user_disk(disk_name: DiskName, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import restore_disk

    return _accepted(caller.change(restore_disk, disk_name))


@router.post(
    "/v1/disks/<disk_name>/clone",
    responses=answers(
        202,
        DiskView,
        "recorded and queued: a new disk from this one's latest completed snapshot",
        *ONE_DISK,
        body=True,
    ),
)
def clone_user_disk(
    disk_name: DiskName, request: CloneRequest, caller: ForCaller
) -> Response[DiskView]:
    from gpudev.disks.requests import clone_disk

    return _accepted(caller.change(clone_disk, disk_name, request))
