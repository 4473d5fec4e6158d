"""EventBridge rate(1 day) → the snapshots and rows of disks past their delete_date, and the
live disks' snapshots beyond the retention (gpudev/disks/purge.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.aws import aws_clients
from gpudev.db.pool import autocommit_connection
from gpudev.disks.purge import purge_disks
from gpudev.observability import logger, metrics, tracer
from gpudev.settings import disk_purge_settings


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with autocommit_connection() as conn:
        result = purge_disks(
            conn,
            aws_clients().ec2,
            f"{context.function_name}:{context.aws_request_id}",
            today=datetime.now(UTC).date(),
            keep=disk_purge_settings().snapshot_retention,
        )
    metrics.add_metric("RunSkipped", MetricUnit.Count, int(result.outcome == "skipped"))
    for name, value in result.statistics.items():
        metrics.add_metric(name, MetricUnit.Count, value)
    return {
        "outcome": result.outcome,
        "run_id": result.run_id,
        "statistics": result.statistics,
        "refused": result.refused,
    }
