"""EventBridge rate(5 minutes) → disks reconciled with EBS (seed 000)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.aws import aws_clients
from gpudev.db.pool import autocommit_connection
from gpudev.disks.reconcile import reconcile_disks
from gpudev.observability import add_run_metrics, logger, metrics, tracer


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with autocommit_connection() as conn:  # the run commits its own transactions
        result = reconcile_disks(
            conn, aws_clients().ec2, f"{context.function_name}:{context.aws_request_id}"
        )
    add_run_metrics(result.outcome, result.statistics)
    return {
        "outcome": result.outcome,
        "run_id": result.run_id,
        "statistics": result.statistics,
        "duplicates": [d.__dict__ for d in result.duplicates],
    }
