"""What the jobs consumer does with each job (at-least-once: every branch is idempotent).

Jobs come from the transactional outbox (gpudev/outbox.py): one is only sent after the
change it announces committed, and may arrive twice (the API's send and the sweeper's
relay). So the consumer reads the committed row and acts only on what it says:

- create: start the reservation's execution, named by the reservation id, so a duplicate
  delivery can never start a second one (ExecutionAlreadyExists is success). No row: there
  is nothing to start (acknowledged, never retried).
- cancel: only if the row carries `cancel_requested_at`; wake the execution through its
  stored token; an execution between tokens finds the stamp at its next step.
- reservation changed: only if the row has a change not applied yet (`change_generation >
  applied_generation`); wake an active execution so it applies the row at once, unless it
  was woken for a change (or applied one) within `change_wake_bound_seconds`: then the
  checkpoint due by the end of that bound applies it (lifecycle/wakes.py); earlier states
  read the row when they provision and activate.

Disk jobs never come here: the handler gives them to `gpudev/disks/operations.py`.

A job that fails comes back (`retry_later`): after `fault_retry_minutes` on the lifecycle's
clock when the fault is transient (the queue's `maxReceiveCount` covers 30 minutes of them:
docs/lifecycle.md, "Outages"), at once when it is permanent, so it spends its receives and
reaches the dead-letter queue in seconds instead of sitting out the outage budget.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.jobs import CancelReservationJob, CreateReservationJob, ReservationChangedJob
from gpudev.lifecycle.wakes import coalesced
from gpudev.models import ReservationStatus
from gpudev.observability import logger
from gpudev.repositories import ReservationsRepository
from gpudev.repositories.change_wakes import ChangeWakesRepository
from gpudev.signals import Signals, Wake


def retry_later(
    sqs: Any, queue_arn: str, receipt_handle: str, error: BaseException, transient_seconds: int
) -> int:
    """Make the failed message visible again after `transient_seconds` for a transient
    `error`, at once for any other; the seconds chosen. Lambda's event source leaves a
    failed message in the queue, so its visibility decides when it comes back."""
    from gpudev.lifecycle.taxonomy import Transient, classify

    seconds = transient_seconds if classify(error) is Transient else 0
    _, _, _, _, account, name = queue_arn.split(":", 5)
    queue_url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
    )
    return seconds


class JobConsumer:
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        stepfunctions: Any,
        state_machine_arn: str,
        change_wake_bound_seconds: float = 0.0,
    ):
        self._reservations = ReservationsRepository(conn)
        self._wakes = ChangeWakesRepository(conn)
        self._bound = change_wake_bound_seconds
        self._stepfunctions = stepfunctions
        self._signals = Signals(stepfunctions)
        self._state_machine_arn = state_machine_arn

    def handle(
        self, job: CreateReservationJob | CancelReservationJob | ReservationChangedJob
    ) -> str:
        if isinstance(job, CreateReservationJob):
            return self._create(job)
        return self._wake(job)

    def _create(self, job: CreateReservationJob) -> str:
        reservation = self._reservations.get(job.reservation_id)
        if reservation is None:
            return "no such reservation: nothing to start"
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
        # Act on the committed row, never on the job alone.
        if cancel and reservation.cancel_requested_at is None:
            logger.warning(
                "a cancel job without a committed cancel request: ignored",
                extra={"reservation_id": str(job.reservation_id)},
            )
            return "no cancel committed: ignored"
        if not cancel and reservation.change_generation <= reservation.applied_generation:
            return "no change to apply"
        if not cancel and reservation.status != ReservationStatus.ACTIVE:
            return "applied when it starts"
        if reservation.task_token is None:
            return "between steps: the next step reads the row"
        if not cancel and coalesced(self._wakes.seconds_since(job.reservation_id), self._bound):
            return "coalesced: the checkpoint due within the bound applies it"
        delivered = self._signals.wake(
            reservation.task_token, Wake(outcome="cancel" if cancel else "changed")
        )
        if not delivered:
            return "token closed: the next step reads the row"
        if not cancel:
            # After delivery: a token is woken once, so of two changes racing here only the
            # one delivered is recorded; the other found the token closed.
            self._wakes.record(job.reservation_id)
        return "woken"
