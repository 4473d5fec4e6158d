"""EventBridge rate(1 minute) → one allocator pass (also run after every release and every
new reservation by the reservation tasks)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.pool import autocommit_connection
from gpudev.lifecycle.runtime import lifecycle
from gpudev.observability import logger, metrics, tracer


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with autocommit_connection() as conn:
        report = lifecycle(conn).allocate()
    metrics.add_metric("Granted", MetricUnit.Count, len(report.granted))
    metrics.add_metric("Queued", MetricUnit.Count, report.queued)
    for waited in report.granted_waits:  # one value per grant: the dashboard's percentiles
        metrics.add_metric("QueueWaitSeconds", MetricUnit.Seconds, waited)
    return {
        "nodes": report.nodes,
        "queued": report.queued,
        "granted": [str(r) for r in report.granted],
        "signalled": report.signalled,
        "released_dead": report.released_dead,
        "signal_failures": report.signal_failures,
        "capacity_gone": [str(r) for r in report.capacity_gone],
    }
