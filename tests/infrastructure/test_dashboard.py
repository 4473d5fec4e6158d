"""The operators' dashboard: every figure #17 asks for is on it, and every metric of ours it
draws is one our code emits (a dashboard line on a metric nobody writes is always empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from cdk_app.declaration import DEPLOYMENT, METRICS_NAMESPACE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def body(template: Template) -> dict[str, Any]:
    ((_, dashboard),) = template.find_resources("AWS::CloudWatch::Dashboard").items()
    assert dashboard["Properties"]["DashboardName"] == "gpu-dev"
    _, parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"]
    # References (queue names, function names, ...) sit inside JSON strings: stand them in.
    text = "".join(part if isinstance(part, str) else "REF" for part in parts)
    return json.loads(text)


def _metrics(body: dict[str, Any]) -> list[list[Any]]:
    return [
        metric
        for widget in body["widgets"]
        for metric in widget.get("properties", {}).get("metrics", [])
    ]


def _drawn(body: dict[str, Any], namespace: str) -> set[str]:
    """Metric names drawn from a namespace, as plain metrics or inside SEARCH expressions."""
    names = set()
    for metric in _metrics(body):
        if metric and metric[0] == namespace:
            names.add(metric[1])
        for option in metric:
            expression = option.get("expression", "") if isinstance(option, dict) else ""
            if f"{{{namespace}," in expression:
                names.update(re.findall(r'MetricName="(\w+)"', expression))
    return names


def test_the_dashboard_shows_every_figure_operators_need(body: dict[str, Any]):
    titles = {widget["properties"].get("title") for widget in body["widgets"]}
    assert {
        "GPUs available, by type",
        "GPUs in use, by type",
        "Queue: reservations waiting, and grants per minute",
        "Queue wait of granted reservations (seconds)",
        "Reservation executions",
        "GPUs held vs used, by type",
        "Dead-letter queues (messages waiting)",
        "API latency (ms)",
        "API errors",
        "Reconciler runs skipped (another run held the lock)",
        "Function errors",
    } <= titles
    assert {"Latency", "4XXError", "5XXError", "Count"} <= _drawn(body, "AWS/ApiGateway")
    assert {"ExecutionsStarted", "ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"} <= (
        _drawn(body, "AWS/States")
    )
    assert "ApproximateNumberOfMessagesVisible" in _drawn(body, "AWS/SQS")
    assert {
        "GpusAvailable",
        "GpusInUse",
        "GpusUsed",
        "Queued",
        "Granted",
        "QueueWaitSeconds",
    } <= _drawn(body, METRICS_NAMESPACE)


def test_every_function_has_its_errors_on_the_dashboard(body: dict[str, Any]):
    errors = [m for m in _metrics(body) if m[:2] == ["AWS/Lambda", "Errors"]]
    labels = {option["label"] for m in errors for option in m if isinstance(option, dict)}
    assert labels == {spec.deployed_name for spec in DEPLOYMENT.functions}


def test_every_metric_of_ours_on_the_dashboard_is_emitted_by_our_code(body: dict[str, Any]):
    sources = "\n".join(
        path.read_text()
        for folder in ("functions", "layers/gpudev/python/gpudev")
        for path in (ROOT / folder).rglob("*.py")
    )
    for name in _drawn(body, METRICS_NAMESPACE):
        assert f'"{name}"' in sources, f"the dashboard draws {name}, which nothing emits"


def test_the_dashboard_links_the_dev_pods_log_group_and_queries_it(body: dict[str, Any]):
    from cdk_app.declaration import POD_LOG_GROUP

    texts = [w["properties"]["markdown"] for w in body["widgets"] if w["type"] == "text"]
    encoded = POD_LOG_GROUP.replace("/", "$252F")
    linked = [t for t in texts if f"#logsV2:log-groups/log-group/{encoded})" in t]
    assert len(linked) == 1 and "gpu-dev admin events" in linked[0]
    queries = [w["properties"] for w in body["widgets"] if w["type"] == "log"]
    assert len(queries) == 1
    assert queries[0]["query"].startswith(f"SOURCE '{POD_LOG_GROUP}' | fields @timestamp")
