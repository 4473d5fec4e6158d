"""GPU use: the idle timeout of a reservation (`edit --idle-timeout`), its last clock hour
per GPU (`show`), and the caller's active reservations' last 15 clock minutes (`list`)
(docs/utilisation.md). Figures come from the DCGM exporters, through the availability
updater."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.reservations.schemas import IdleTimeoutRequest, ReservationView
from gpudev.utilisation.schemas import RecentUseList, ReservationUse
from routes.answers import answers
from routes.caller import ForCaller
from routes.params import ReservationId

router = Router()


@router.put(
    "/v1/reservations/<reservation_id>/idle-timeout",
    responses=answers(
        200,
        ReservationView,
        "the timeout set; the idle clock restarts and a warning is withdrawn",
        404,
        409,
        422,
        body=True,
        meanings={
            409: "the reservation ended, or its idle ending is recorded; nothing was written",
            422: "not a duration, 0, or over the deployment's maximum; nothing was written",
        },
    ),
)
def set_idle_timeout(
    reservation_id: ReservationId, request: IdleTimeoutRequest, caller: ForCaller
) -> ReservationView:
    from gpudev.reservations.service import change_idle_timeout

    return ReservationView.of(
        caller.read(change_idle_timeout, reservation_id, request.idle_timeout)
    )


@router.get(
    "/v1/reservations/<reservation_id>/utilisation",
    responses=answers(
        200, ReservationUse, "each GPU's utilisation and memory, last clock hour", 404, 409, 422
    ),
)
def get_reservation_use(reservation_id: ReservationId, caller: ForCaller) -> ReservationUse:
    from gpudev.reservations.service import reservation_utilisation

    return caller.read(reservation_utilisation, reservation_id)


@router.get(
    "/v1/utilisation",
    responses=answers(
        200, RecentUseList, "the caller's active reservations' GPU use, last 15 clock minutes"
    ),
)
def my_recent_use(caller: ForCaller) -> RecentUseList:
    from gpudev.reservations.service import caller_recent_use

    return caller.read(caller_recent_use)
