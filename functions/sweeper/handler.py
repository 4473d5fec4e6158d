"""EventBridge rate(5 minutes) → one sweeper run (gpudev/sweeper/): ends reservations whose
execution died, deletes objects of ended reservations, re-sends lost create jobs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.pool import autocommit_connection
from gpudev.observability import add_run_metrics, logger, metrics, tracer
from gpudev.sweeper.runtime import sweeper


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with autocommit_connection() as conn:
        result = sweeper(conn).run(f"{context.function_name}:{context.aws_request_id}")
    add_run_metrics(result.outcome, result.statistics)
    # SweeperRepairs > 0 raises an alarm: something in the lifecycle failed to clean up.
    metrics.add_metric("SweeperRepairs", MetricUnit.Count, result.repairs)
    return {
        "outcome": result.outcome,
        "run_id": result.run_id,
        "repairs": result.repairs,
        "statistics": result.statistics,
    }
