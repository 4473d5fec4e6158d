"""The network shares (docs/shared-files.md): the caller's shares with the personal share's
usage (`gpu-dev disk list`) and a reservation's mounts (`gpu-dev show`), as the control
plane knows them."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.shared_files.schemas import MountList, ShareList
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import ReservationId

router = Router()


@router.get(
    "/v1/shares",
    responses=answers(
        200, ShareList, "the caller's personal share (usage: the file system's) and the team's"
    ),
)
def list_shares(caller: ForCaller) -> ShareList:
    from gpudev.aws import aws_clients
    from gpudev.settings import shared_files_settings
    from gpudev.shared_files.listing import caller_shares

    return caller.read(caller_shares, aws_clients().efs, shared_files_settings())


@router.get(
    "/v1/reservations/<reservation_id>/mounts",
    responses=answers(200, MountList, "what each of the reservation's pods mounts", 404, 422),
)
def list_reservation_mounts(reservation_id: ReservationId, caller: ForCaller) -> MountList:
    from gpudev.settings import shared_files_settings
    from gpudev.shared_files.listing import reservation_mounts

    return caller.read(reservation_mounts, reservation_id, shared_files_settings())
