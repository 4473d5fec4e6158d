"""Jobs the API puts on the SQS jobs queue: one pydantic model per kind, shared with the
consumer that turns them into Step Functions work. Every job goes through the
transactional outbox (gpudev/outbox.py): written with its change, sent after its commit, so
a job only exists for a committed change."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field, TypeAdapter

from gpudev.errors import Unavailable
from gpudev.observability import logger


class CreateReservationJob(BaseModel):
    kind: Literal["create_reservation"] = "create_reservation"
    reservation_id: UUID
    user_id: str


class CancelReservationJob(BaseModel):
    kind: Literal["cancel_reservation"] = "cancel_reservation"
    reservation_id: UUID
    user_id: str


class ReservationChangedJob(BaseModel):
    """Extend, add-user or Jupyter: the new desired state is already on the row (with
    `change_generation`); the job only wakes the execution to apply it."""

    kind: Literal["reservation_changed"] = "reservation_changed"
    reservation_id: UUID
    user_id: str
    change_generation: int


class DiskJob(BaseModel):
    """A disk operation the API recorded on the disk's row (operation_id/status)."""

    kind: Literal["disk_operation"] = "disk_operation"
    operation: Literal["create", "delete", "rename", "restore", "clone"]
    operation_id: UUID
    disk_id: UUID
    user_id: str
    disk_name: str
    # a rename: the name before it; a clone: the source disk's name when it was asked
    previous_name: str | None = None


AnyJob = CreateReservationJob | CancelReservationJob | ReservationChangedJob | DiskJob
Job = Annotated[AnyJob, Field(discriminator="kind")]
_JOB = TypeAdapter(Job)


def parse_job(body: str) -> Job:
    return _JOB.validate_json(body)


def job_from_payload(payload: Any) -> Job:
    """A job from its outbox payload (JSONB, as psycopg loads it)."""
    return _JOB.validate_python(payload)


class JobQueue:
    def __init__(self, sqs: Any, queue_url: str):
        self._sqs = sqs
        self._queue_url = queue_url

    def send(self, job: AnyJob) -> str:
        try:
            response = self._sqs.send_message(
                QueueUrl=self._queue_url,
                MessageBody=job.model_dump_json(),
                MessageAttributes={"kind": {"DataType": "String", "StringValue": job.kind}},
            )
        except (BotoCoreError, ClientError) as exc:
            logger.exception("the jobs queue refused a job", extra={"job": job.model_dump_json()})
            raise Unavailable(
                "the jobs queue did not accept the request; nothing was saved, try again"
            ) from exc
        return str(response["MessageId"])
