"""Taking a reservation and parking it until the allocator grants it capacity."""

from __future__ import annotations

import math

from gpudev.lifecycle.payloads import Start, StartOutput, WaitForCapacity
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.observability import logger
from gpudev.signals import Wake


def start(lc: Lifecycle, task: Start) -> StartOutput:
    row = lc.rows.start(task.reservation_id, task.execution_arn)
    if row is None or row.status.is_final:
        return StartOutput(outcome="gone")
    if row.cancel_requested_at is not None:
        return StartOutput(outcome="cancel")
    settings = lc.settings
    return StartOutput(
        outcome="queue",
        queue_timeout_seconds=math.ceil(settings.queue_timeout_hours * settings.seconds_per_hour),
        ready_poll_seconds=settings.ready_poll_seconds,
        fault_retry_seconds=max(1, math.ceil(lc.schedule.minutes(settings.fault_retry_minutes))),
        builds_image=row.image_build is not None and row.image is None,
    )


def wait_for_capacity(lc: Lifecycle, task: WaitForCapacity) -> None:
    """Park on the token, then run an allocator pass, which wakes us if we fit.

    A grant made before this token was stored was signalled to an earlier token (an
    attempt of this state that failed after parking, retried with a new token): the
    allocator counts it as told, so this token is woken here, or nobody would."""
    row = lc.rows.park(task.reservation_id, task.task_token)
    if row is None or row.cancel_requested_at is not None:
        lc.signals.wake(task.task_token, Wake(outcome="cancel"))
        return
    if row.granted_at is not None:
        logger.info("granted before this token was stored: waking it")
        lc.signals.wake(task.task_token, Wake(outcome="granted"))
        return
    lc.allocate_for_the_queue()
