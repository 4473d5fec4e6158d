"""EventBridge rate(1 minute) → gpu_types availability (seeds 000/001), the active
reservations' pod health, their GPU use from the DCGM exporters (idle reclaim), and the EFA
nodes' Elastic IPs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.availability.service import update_availability
from gpudev.aws import aws_clients
from gpudev.cluster.eks import cluster_api_client
from gpudev.db.pool import connection
from gpudev.observability import add_gpu_type_metrics, logger, metrics, tracer
from gpudev.signals import Signals


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    clients = aws_clients()
    with connection() as conn:
        run = update_availability(
            conn,
            clients.autoscaling,
            cluster_api_client,
            Signals(clients.stepfunctions),
            invoked_by=f"{context.function_name}:{context.aws_request_id}",
            ec2=clients.ec2,  # the EFA nodes' Elastic IPs (gpudev/cluster/addresses.py)
        )
    metrics.add_metric("KubernetesReachable", MetricUnit.Count, int(run.kubernetes_reachable))
    used = run.utilisation.busy_gpus if run.utilisation else None
    for result in run.results:
        add_gpu_type_metrics(
            result.gpu_type,
            available=result.available_gpus,
            in_use=result.total_cluster_gpus - result.available_gpus,
            used=None if used is None else used.get(result.gpu_type, 0),
        )
    metrics.add_metric("PodHealthEndings", MetricUnit.Count, run.endings_woken)
    if run.utilisation is not None:
        metrics.add_metric("IdleEndings", MetricUnit.Count, run.utilisation.ended)
    logger.info("availability updated", extra={"statistics": run.statistics})
    return {"run_id": run.run_id, "statistics": run.statistics}
