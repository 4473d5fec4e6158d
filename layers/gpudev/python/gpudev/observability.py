"""powertools Logger, Metrics and Tracer, created once and shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in CDK). The metrics
namespace is fixed here rather than read from the environment at import, so a process that
imports this module before its environment is complete (the local cloud, tests) still emits
valid metrics. The tracer is made at the first traced invocation (`LazyTracer`) and disables
itself outside Lambda.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

METRICS_NAMESPACE = "GpuDev"

# stderr: stdout carries EMF metrics in Lambda, and command output when functions run
# in-process beside the CLI (the local cloud's tests). CloudWatch records both streams.
logger = Logger(stream=sys.stderr)
metrics = Metrics(namespace=METRICS_NAMESPACE)

# What X-Ray records besides the handler's own subsegment: AWS calls, SQL on the pool's
# connections, and HTTP (the Kubernetes API). Not powertools' default of every library the
# SDK supports, which imports each one present (requests, sqlite3, httpx...) to patch it.
TRACED_MODULES = ("botocore", "psycopg", "httplib")
Handler = TypeVar("Handler", bound=Callable[..., Any])


class LazyTracer:
    """powertools' Tracer, made when a traced handler is first invoked instead of at import.

    Making it imports the X-Ray SDK and patches TRACED_MODULES, which imports each of them
    (botocore's client, psycopg): about 0.5 s that every function's cold start paid at import,
    traced or not (bench/cold_start.py). A handler decorated here pays it at its first
    invocation, once per execution environment; other functions never do."""

    def __init__(self, patch_modules: tuple[str, ...]):
        self._patch_modules = patch_modules
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    @property
    def tracer(self) -> Tracer:
        with self._lock:
            if self._tracer is None:
                self._tracer = Tracer(patch_modules=self._patch_modules)
            return self._tracer

    def capture_lambda_handler(self, *, capture_response: bool) -> Callable[[Handler], Handler]:
        """Tracer.capture_lambda_handler, applied at the handler's first invocation."""

        def decorate(handler: Handler) -> Handler:
            traced: list[Callable[..., Any]] = []

            @functools.wraps(handler)
            def invoke(event: Any, context: Any) -> Any:
                if not traced:
                    traced.append(
                        self.tracer.capture_lambda_handler(
                            handler, capture_response=capture_response
                        )
                    )
                return traced[0](event, context)

            return invoke  # type: ignore[return-value]

        return decorate


tracer = LazyTracer(TRACED_MODULES)


def add_run_metrics(outcome: str, statistics: Mapping[str, int]) -> None:
    """A scheduled reconciler run's metrics: RunSkipped (1 when another run held the lock)
    and one count per statistic."""
    metrics.add_metric("RunSkipped", MetricUnit.Count, int(outcome == "skipped"))
    for name, value in statistics.items():
        metrics.add_metric(name, MetricUnit.Count, value)


def add_gpu_type_metrics(
    gpu_type: str, available: int, in_use: int, used: int | None = None
) -> None:
    """GpusAvailable and GpusInUse of one GPU type, with dimensions `service` and `gpu_type`
    (the dashboard draws one line per type with a SEARCH): written at once, as one metric
    set per type, since a Metrics object's dimensions apply to all its metrics. Nothing when
    metrics are disabled (the local cloud): powertools' single_metric prints its EMF line on
    stdout either way, where it mixed into the output of CLI commands run beside it."""
    if is_metrics_disabled():
        return
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "service_undefined")
    figures = [("GpusAvailable", available), ("GpusInUse", in_use)]
    if used is not None:  # GPUs of reservations busy per their DCGM exporter (utilisation/)
        figures.append(("GpusUsed", used))
    for name, value in figures:
        with single_metric(
            name=name,
            unit=MetricUnit.Count,
            value=value,
            namespace=METRICS_NAMESPACE,
            default_dimensions={"service": service},
        ) as metric:
            metric.add_dimension("gpu_type", gpu_type)
