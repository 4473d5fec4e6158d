"""`show` (and `reserve` after following) print the start-up step a starting reservation is
in, and under a failed start's reason the log tail its timeline recorded."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from gpudev_cli import render

PREPARING: dict[str, Any] = {
    "reservation_id": "7a6b5c4d-0000-4000-8000-000000000007",
    "name": None,
    "status": "preparing",
    "gpu_type": "t4",
    "gpu_count": 1,
    "duration_hours": 1.0,
    "jupyter_enabled": False,
    "disk_name": None,
    "secondary_users": [],
    "current_detailed_status": "waiting for a node: 0/2 nodes have 8 free nvidia.com/gpu",
}


def _panel(r: dict[str, Any], monkeypatch: Any, failure_log: str | None = None) -> str:
    out = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=out, width=200, no_color=True))
    render.reservation_panel(r, failure_log)
    return out.getvalue()


def test_a_starting_reservation_shows_its_step(monkeypatch):
    text = _panel(PREPARING, monkeypatch)
    assert "Now: waiting for a node: 0/2 nodes have 8 free nvidia.com/gpu" in text


def test_a_failed_start_shows_its_reason_then_the_log_tail(monkeypatch):
    failed = {
        **PREPARING,
        "status": "failed",
        "current_detailed_status": "the pod did not start: [boom]",
        "failure_reason": "the pod did not start: [boom]",
    }
    tail = "last 2 log lines of pod p (container gpu-dev):\nstep one\n[not markup]"
    text = _panel(failed, monkeypatch, tail)
    assert "Now:" not in text  # ended: the reason says it
    assert text.index("Ended (failed): the pod did not start: [boom]") < text.index(
        "last 2 log lines of pod p (container gpu-dev):\nstep one\n[not markup]"
    )


def test_the_events_table_shows_every_kind_with_its_detail(monkeypatch):
    from gpudev.models import EventKind
    from gpudev_cli import timeline

    kinds = list(EventKind.__args__)  # type: ignore[attr-defined]
    rows = [
        {
            "at": f"2026-11-27T10:00:{n:02d}.123456+00:00",
            "kind": kind,
            "from_status": "queued" if kind == "status" else "preparing",
            "to_status": "preparing",
            "detail": f"{kind} said [this]" + ("\nsecond line" if kind == "pod_log" else ""),
        }
        for n, kind in enumerate(kinds)
    ]
    out = io.StringIO()
    monkeypatch.setattr(timeline, "console", Console(file=out, width=200, no_color=True))
    timeline.events_table(rows)
    text = out.getvalue()
    for n, kind in enumerate(kinds):
        line = next(line for line in text.splitlines() if f"{kind} said [this]" in line)
        assert f"2026-11-27 10:00:{n:02d}" in line and f" {kind} " in line, line
    assert "queued → preparing" in text  # a change shows both ends; the others one status
    assert "second line" in text  # a log tail keeps its lines
