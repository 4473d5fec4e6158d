"""powertools Logger, Metrics and Tracer, created once and shared by every function.

The service name comes from POWERTOOLS_SERVICE_NAME (set per function in CDK); the
metrics namespace from POWERTOOLS_METRICS_NAMESPACE. Tracer disables itself outside
Lambda, so importing this in tests or the local cloud costs nothing.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
