"""EventBridge rule `gpudev-notify` on the bus gpu-dev → one event told to its user by e-mail
and Slack (gpudev/notifications/delivery.py). Invoked asynchronously: an error makes Lambda
try the event again (twice, with its backoff) and then leaves it in gpudev-notify-dlq."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.pool import autocommit_connection
from gpudev.notifications.messages import BusEvent
from gpudev.notifications.runtime import notifier
from gpudev.observability import logger, metrics, tracer


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bus_event = BusEvent.model_validate(event)
    with autocommit_connection() as conn:
        delivered = notifier(conn).notify(bus_event)
    return {"sent": delivered.sent, "skipped": delivered.skipped}
