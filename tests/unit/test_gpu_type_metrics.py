"""The per-type EMF the dashboard draws: dimensions `service` and `gpu_type`, and nothing at
all on stdout when metrics are disabled (the local cloud runs functions beside the CLI, whose
stdout is its output)."""

from __future__ import annotations

import json

import pytest

from gpudev.observability import add_gpu_type_metrics


def test_each_type_gets_its_available_and_in_use_figures(monkeypatch, capsys):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "gpudev-availability-updater")
    add_gpu_type_metrics("h100", available=3, in_use=13)
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(d["gpu_type"], d["service"]) for d in documents] == [
        ("h100", "gpudev-availability-updater")
    ] * 2
    assert {
        name: d[name] for d in documents for name in ("GpusAvailable", "GpusInUse") if name in d
    } == {
        "GpusAvailable": [3.0],
        "GpusInUse": [13.0],
    }
    (directive,) = documents[0]["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "GpuDev" and directive["Dimensions"] == [
        ["service", "gpu_type"]
    ]


@pytest.mark.parametrize("value", ["true", "1"])
def test_disabled_metrics_print_nothing(monkeypatch, capsys, value):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", value)
    add_gpu_type_metrics("h100", available=3, in_use=13)
    assert capsys.readouterr().out == ""
