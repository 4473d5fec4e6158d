"""powertools Logger, Metrics and Tracer, created once and shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in CDK). The metrics
namespace is fixed here rather than read from the environment at import, so a process that
imports this module before its environment is complete (the local cloud, tests) still emits
valid metrics. Tracer disables itself outside Lambda.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

METRICS_NAMESPACE = "GpuDev"

# stderr: stdout carries EMF metrics in Lambda, and command output when functions run
# in-process beside the CLI (the local cloud's tests). CloudWatch records both streams.
logger = Logger(stream=sys.stderr)
metrics = Metrics(namespace=METRICS_NAMESPACE)
tracer = Tracer()


def add_run_metrics(outcome: str, statistics: Mapping[str, int]) -> None:
    """A scheduled reconciler run's metrics: RunSkipped (1 when another run held the lock)
    and one count per statistic."""
    metrics.add_metric("RunSkipped", MetricUnit.Count, int(outcome == "skipped"))
    for name, value in statistics.items():
        metrics.add_metric(name, MetricUnit.Count, value)


def add_gpu_type_metrics(gpu_type: str, available: int, in_use: int) -> None:
    """GpusAvailable and GpusInUse of one GPU type, with dimensions `service` and `gpu_type`
    (the dashboard draws one line per type with a SEARCH): written at once, as one metric
    set per type, since a Metrics object's dimensions apply to all its metrics.
    `single_metric` prints at once and ignores POWERTOOLS_METRICS_DISABLED (the local
    cloud's setting), so that is checked here."""
    if is_metrics_disabled():
        return
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "service_undefined")
    for name, value in (("GpusAvailable", available), ("GpusInUse", in_use)):
        with single_metric(
            name=name,
            unit=MetricUnit.Count,
            value=value,
            namespace=METRICS_NAMESPACE,
            default_dimensions={"service": service},
        ) as metric:
            metric.add_dimension("gpu_type", gpu_type)
