"""Ending a reservation, whatever the path: delete every labelled object (a disk's claim and
PersistentVolume included), release the allocation, record the final status once, and let
the queue move. A named disk is saved and freed after this (lifecycle/disk.py)."""

from __future__ import annotations

from gpudev.allocation.service import release_allocation
from gpudev.cluster.volumes import PersistentVolumes
from gpudev.lifecycle.payloads import Ending, EndingKind, TearDown, TearDownOutput
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.models import ReservationStatus
from gpudev.observability import logger

# Every ending's status and reason (failure_reason and the status line; a reason is
# required: reservations_ending_reason_check). A cancel an operator asked for records the
# operator's reason instead (lifecycle/end.sql).
ENDINGS: dict[EndingKind, tuple[ReservationStatus, str]] = {
    "expire": (ReservationStatus.EXPIRED, "expired: its reserved time ran out"),
    "cancel": (ReservationStatus.CANCELLED, "cancelled by the user"),
    "stale": (
        ReservationStatus.CANCELLED,
        "stale: waited {hours:g} h in the queue without getting capacity (the queue timeout)",
    ),
}
NO_REASON = "failed: its execution gave no reason (see the logs of its Step Functions execution)"


def tear_down(lc: Lifecycle, task: TearDown) -> TearDownOutput:
    reservation_id = task.reservation_id
    status, detail = final_status(task.ending, lc.settings.queue_timeout_hours)
    deleted = lc.objects(lc.reservation(reservation_id)).delete_all(str(reservation_id))
    deleted += PersistentVolumes(lc.api_client).delete_all(str(reservation_id))
    with lc.conn.transaction():
        release_allocation(lc.conn, reservation_id)
        ended = lc.rows.end(reservation_id, status, detail)
    final = ended.status if ended else lc.reservation(reservation_id).status
    logger.info(
        "reservation torn down",
        extra={"reservation_id": str(reservation_id), "status": final, "objects": deleted},
    )
    lc.allocate_for_the_queue()
    return TearDownOutput(status=final, objects_deleted=deleted)


def final_status(ending: Ending, queue_timeout_hours: float) -> tuple[ReservationStatus, str]:
    """The final status and its reason, never empty, from what the state machine passes."""
    if ending.kind == "expire" and (ending.reason or "").strip():  # idle: "idle for 2 h"
        return ReservationStatus.EXPIRED, f"expired: {(ending.reason or '').strip()}"
    if ending.kind in ENDINGS:
        status, reason = ENDINGS[ending.kind]
        return status, reason.format(hours=queue_timeout_hours)
    reason = (ending.reason or "").strip()
    if not reason and ending.error is not None:
        reason = ending.error.reason().strip()
    return ReservationStatus.FAILED, reason or NO_REASON
