"""SQS jobs queue → reservations' executions (gpudev/lifecycle/consumer.py) and disk
operations (gpudev/disks/operations.py). Batches report partial failures: only the failed
messages come back."""

from __future__ import annotations

import math
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.aws import aws_clients
from gpudev.db.pool import autocommit_connection
from gpudev.disks.operations import DiskOperations
from gpudev.jobs import DiskJob, parse_job
from gpudev.lifecycle.consumer import JobConsumer, retry_later
from gpudev.observability import logger, tracer
from gpudev.settings import lifecycle_settings

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> str:
    try:
        return handle_job(record)
    except Exception as error:
        _come_back(record, error)
        raise


def handle_job(record: SQSRecord) -> str:
    job = parse_job(record.body)
    with autocommit_connection() as conn:
        if isinstance(job, DiskJob):
            outcome = DiskOperations(conn, aws_clients().ec2).handle(job)
        else:
            settings = lifecycle_settings()
            consumer = JobConsumer(
                conn,
                aws_clients().stepfunctions,
                settings.reservation_state_machine_arn,
                # on the lifecycle's clock, as the checkpoints' parks (lifecycle/wakes.py)
                settings.change_wake_minutes * settings.seconds_per_hour / 60,
            )
            outcome = consumer.handle(job)
    logger.info("job handled", extra={"kind": job.kind, "outcome": outcome})
    return outcome


def _come_back(record: SQSRecord, error: Exception) -> None:
    """A failed job comes back after the fault-retry wait if transient, else at once; best
    effort: if SQS does not take it, the queue's visibility timeout brings it back."""
    settings = lifecycle_settings()
    wait = max(1, math.ceil(settings.fault_retry_minutes * settings.seconds_per_hour / 60))
    try:
        seconds = retry_later(
            aws_clients().sqs, record.event_source_arn, record.receipt_handle, error, wait
        )
        logger.warning(f"job failed, back in {seconds} s: {type(error).__name__}: {error}")
    except Exception:
        logger.warning("job failed; its visibility could not be changed", exc_info=True)


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
