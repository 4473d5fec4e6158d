"""Named persistent disks: each change is recorded on the disk's row and queued as a job.

Each route imports its service when it runs: the services import the database driver and
the repositories, which the handler's import does not pay for (bench/cold_start.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.disks.schemas import DiskContent, DiskList, DiskRequest, DiskView, RenameRequest
from gpudev.models import Disk
from routes.caller import ForCaller

router = Router()


def _accepted(disk: Disk) -> Response[DiskView]:
    return Response(202, content_types.APPLICATION_JSON, DiskView.of(disk))


@router.post("/v1/disks")
def create_user_disk(request: DiskRequest, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import create_disk

    return _accepted(caller.change(create_disk, request))


@router.get("/v1/disks")
def list_disks(caller: ForCaller) -> DiskList:
    from gpudev.disks.requests import caller_disks

    return DiskList.of(caller.read(caller_disks))


@router.get("/v1/disks/<disk_name>")
def get_disk(disk_name: str, caller: ForCaller) -> DiskView:
    from gpudev.disks.requests import find_disk

    return DiskView.of(caller.read(find_disk, disk_name))


@router.get("/v1/disks/<disk_name>/content")
def get_disk_content(disk_name: str, caller: ForCaller) -> DiskContent:
    from gpudev.disks.requests import disk_content

    return caller.read(disk_content, disk_name)


@router.delete("/v1/disks/<disk_name>")
def delete_user_disk(disk_name: str, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import delete_disk

    return _accepted(caller.change(delete_disk, disk_name))


@router.post("/v1/disks/<disk_name>/rename")
def rename_user_disk(
    disk_name: str, request: RenameRequest, caller: ForCaller
) -> Response[DiskView]:
    from gpudev.disks.requests import rename_disk

    return _accepted(caller.change(rename_disk, disk_name, request))


@router.post("/v1/disks/<disk_name>/restore")
def restore_user_disk(disk_name: str, caller: ForCaller) -> Response[DiskView]:
    from gpudev.disks.requests import restore_disk

    return _accepted(caller.change(restore_disk, disk_name))
