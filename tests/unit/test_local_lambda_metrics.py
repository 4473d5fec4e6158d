"""The local cloud's Lambda keeps EMF off stdout when metrics are disabled, however many
invocations add a metric (powertools prints the set, disabled or not, once one metric holds
100 values; with metrics disabled its flush never clears them)."""

from pathlib import Path

import pytest

from cdk_app.declaration import FunctionSpec
from localcloud.lambdas import LocalLambda

HANDLER = """
from aws_lambda_powertools.metrics import MetricUnit

from gpudev.observability import metrics


@metrics.log_metrics
def handler(event, context):
    metrics.add_metric("Invocations", MetricUnit.Count, 1)
    return "done"
"""


def test_no_emf_on_stdout_after_many_invocations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    (tmp_path / "counting").mkdir()
    (tmp_path / "counting" / "handler.py").write_text(HANDLER)
    spec = FunctionSpec(
        name="Counting", folder="counting", source_root=str(tmp_path), uses_database=False
    )
    functions = LocalLambda((spec,), "us-east-2")

    replies = [functions.invoke("Counting", {}) for _ in range(150)]

    assert all(r.payload == "done" and not r.errored for r in replies)
    assert "CloudWatchMetrics" not in capsys.readouterr().out


def test_per_type_gpu_metrics_stay_off_stdout_when_disabled(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """powertools' single_metric prints its EMF line disabled or not: the availability
    updater's per-type metrics, printed by the local cloud's thread, landed in the output of
    a CLI command run at the same moment (tests/e2e/test_cli.py read two JSON documents)."""
    from gpudev.observability import add_gpu_type_metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    add_gpu_type_metrics("h100", available=8, in_use=0)
    assert capsys.readouterr().out == ""

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    add_gpu_type_metrics("h100", available=8, in_use=0)
    assert capsys.readouterr().out.count("CloudWatchMetrics") == 2
