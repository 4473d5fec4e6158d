"""What the jobs consumer does with each job (at-least-once: every branch is idempotent).

- create: start the reservation's execution, named by the reservation id, so a duplicate
  delivery can never start a second one (ExecutionAlreadyExists is success). The API sends
  the job just before it commits the row, so the row may be a few milliseconds behind the
  job: the consumer waits for it briefly, then fails the message so SQS redelivers it (a row
  that never commits ends in the dead-letter queue, never as a stuck reservation).
- cancel: wake the execution through its stored token; an execution between tokens finds
  `cancel_requested_at` at its next step.
- reservation changed: wake an active execution so it applies the row at once; earlier
  states read the row when they provision and activate.
- disk operations: acknowledged; the disk lifecycle acts on them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.jobs import (
    CancelReservationJob,
    CreateReservationJob,
    DiskJob,
    Job,
    ReservationChangedJob,
)
from gpudev.lifecycle.signals import Signals
from gpudev.models import Reservation, ReservationStatus
from gpudev.observability import logger
from gpudev.repositories import ReservationsRepository


class RowNotCommitted(Exception):
    """The job's reservation is not visible (yet): SQS redelivers the message."""


class JobConsumer:
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        stepfunctions: Any,
        state_machine_arn: str,
        row_wait_seconds: float = 3.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self._reservations = ReservationsRepository(conn)
        self._row_wait_seconds = row_wait_seconds
        self._sleep = sleep
        self._stepfunctions = stepfunctions
        self._signals = Signals(stepfunctions)
        self._state_machine_arn = state_machine_arn

    def handle(self, job: Job) -> str:
        if isinstance(job, CreateReservationJob):
            return self._create(job)
        if isinstance(job, CancelReservationJob | ReservationChangedJob):
            return self._wake(job)
        assert isinstance(job, DiskJob)
        logger.info("disk job acknowledged", extra={"job": job.model_dump(mode="json")})
        return "acknowledged"

    def _committed_row(self, job: CreateReservationJob) -> Reservation:
        waited = 0.0
        while (reservation := self._reservations.get(job.reservation_id)) is None:
            if waited >= self._row_wait_seconds:
                raise RowNotCommitted(f"reservation {job.reservation_id} is not committed")
            self._sleep(0.1)
            waited += 0.1
        return reservation

    def _create(self, job: CreateReservationJob) -> str:
        reservation = self._committed_row(job)
        if reservation.status != ReservationStatus.PENDING:
            return f"already {reservation.status}"
        try:
            self._stepfunctions.start_execution(
                stateMachineArn=self._state_machine_arn,
                name=str(job.reservation_id),
                input=json.dumps({"reservation_id": str(job.reservation_id)}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ExecutionAlreadyExists":
                return "execution already started"
            raise
        return "execution started"

    def _wake(self, job: CancelReservationJob | ReservationChangedJob) -> str:
        reservation = self._reservations.get(job.reservation_id)
        if reservation is None or reservation.status.is_final:
            return "nothing to wake"
        cancel = isinstance(job, CancelReservationJob)
        if not cancel and reservation.status != ReservationStatus.ACTIVE:
            return "applied when it starts"
        if reservation.task_token is None:
            return "between steps: the next step reads the row"
        delivered = self._signals.wake(
            reservation.task_token, {"outcome": "cancel" if cancel else "changed"}
        )
        return "woken" if delivered else "token closed: the next step reads the row"
