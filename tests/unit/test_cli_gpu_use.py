"""The CLI's GPU use: `list`'s column, `show`'s last hour per GPU, `usage`'s used beside
held, and the idle timeout as `show` and `edit` say it."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from gpudev_cli import render, usage_render, utilisation


@pytest.fixture
def out(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    text = io.StringIO()
    console = Console(file=text, width=120, no_color=True)
    for module in (render, usage_render, utilisation):
        monkeypatch.setattr(module, "console", console)
    return text


def _row(**fields: Any) -> dict[str, Any]:
    return {"status": "active", "gpu_count": 8, **fields}


def test_the_gpu_use_cell_says_the_percent_or_that_there_is_no_sample_yet():
    assert render.gpu_use_cell(_row(gpu_use_percent=87.4)) == "87%"
    assert render.gpu_use_cell(_row(gpu_use_percent=1.0)) == "[yellow]1%[/]"
    assert render.gpu_use_cell(_row()) == "[dim]–[/]"
    assert render.gpu_use_cell(_row(status="queued", gpu_use_percent=50)) == ""
    assert render.gpu_use_cell(_row(gpu_count=0)) == ""


def test_the_idle_timeout_in_words():
    assert render.idle_timeout_words({"idle_timeout_minutes": 120}) == "2 h"
    assert render.idle_timeout_words({"idle_timeout_minutes": 90}) == "1 h 30 min"
    assert render.idle_timeout_words({"idle_timeout_minutes": 45}) == "45 min"
    assert render.idle_timeout_words({"idle_timeout_minutes": None}) == "never (none)"


def test_show_prints_each_gpus_last_hour(out: io.StringIO):
    samples = [{"at": "…", "util_percent": u, "memory_used_mib": 2048} for u in (0, 50, 100)]
    use = {
        "minutes": 60,
        "gpus": [
            {
                "gpu": "node-a/0",
                "mean_util_percent": 50.0,
                "peak_util_percent": 100.0,
                "memory_used_mib": 2048,
                "peak_memory_used_mib": 4096,
                "samples": samples,
            }
        ],
    }
    utilisation.use_table(use)
    text = out.getvalue()
    assert "GPU use, last 60 min" in text
    assert "node-a/0" in text and "50% / 100%" in text and "2.0 / 4.0 GiB" in text
    assert " ▄█" in text
    utilisation.use_table({"minutes": 60, "gpus": []})
    assert "no sample yet" in out.getvalue()


def test_usage_shows_used_beside_held_with_the_efficiency(out: io.StringIO):
    report = {
        "gpu_hours": [
            {"username": "alice", "gpu_type": "h100", "day": "2026-11-26", "gpu_hours": 6.0},
            {"username": "alice", "gpu_type": "h100", "day": "2026-11-27", "gpu_hours": 2.0},
        ],
        "gpu_hours_used": [
            {
                "username": "alice",
                "gpu_type": "h100",
                "used_gpu_hours": 2.0,
                "sampled_gpu_hours": 8.0,
                "mean_util_percent": 31.0,
            }
        ],
    }
    usage_render.console.print(usage_render.used_vs_held(report))
    line = next(line for line in out.getvalue().splitlines() if "alice" in line)
    assert line.replace("│", " ").split() == ["alice", "h100", "8.00", "2.00", "25%", "31%"]
