"""EventBridge rate(1 minute) → one batch of the lifecycle's events put on the bus gpu-dev
(gpudev/events/relay.py; the events are written with their row change, migrations/0039)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.aws import aws_clients
from gpudev.db.pool import autocommit_connection
from gpudev.events.relay import relay_bus_events
from gpudev.observability import add_run_metrics, logger, metrics, tracer
from gpudev.settings import event_relay_settings


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with autocommit_connection() as conn:
        result = relay_bus_events(conn, aws_clients().events, event_relay_settings().event_bus_name)
    statistics = {"events_published": result.published, "events_refused": result.refused}
    add_run_metrics("succeeded", statistics)
    return statistics
