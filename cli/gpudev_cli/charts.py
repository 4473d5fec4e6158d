"""`--chart FILE.png`: GPU-hours by UTC day stacked by GPU type, and queue waits by type
(p50/p90/max), drawn headless (matplotlib's Agg backend). matplotlib is the `chart` extra,
imported only here and only when a chart is asked for."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudev_cli.client import CliError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WAIT_SERIES = ("p50_minutes", "p90_minutes", "max_minutes")


@dataclass(frozen=True)
class ChartData:
    days: list[date]  # every UTC day of the window, in order
    hours_by_type: dict[str, list[float]]  # GPU type → GPU-hours per day, aligned with days
    wait_types: list[str]
    waits: dict[str, list[float]]  # p50/p90/max → minutes per type (0 when none granted)


def chart_data(report: dict[str, Any]) -> ChartData:
    first = datetime.fromisoformat(report["since"]).date()
    last = (datetime.fromisoformat(report["until"]) - timedelta(microseconds=1)).date()
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    index = {day: i for i, day in enumerate(days)}
    hours: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(days))
    for row in report["gpu_hours"]:
        hours[row["gpu_type"]][index[date.fromisoformat(row["day"])]] += row["gpu_hours"]
    waits = report["queue_waits"]
    return ChartData(
        days=days,
        hours_by_type=dict(sorted(hours.items())),
        wait_types=[w["gpu_type"] for w in waits],
        waits={s: [w[s] or 0.0 for w in waits] for s in WAIT_SERIES},
    )


def usage_figure(data: ChartData, title: str) -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise CliError("--chart needs matplotlib: pip install 'gpu-dev[cli,chart]'") from error
    # Figure() without pyplot: no GUI backend, no global state; saved through Agg.
    figure = Figure(figsize=(11, 8), layout="constrained")
    FigureCanvasAgg(figure)
    by_day, by_wait = figure.subplots(2, 1)
    labels = [d.strftime("%m-%d") for d in data.days]
    bottom = [0.0] * len(data.days)
    for gpu_type, hours in data.hours_by_type.items():
        by_day.bar(labels, hours, bottom=bottom, label=gpu_type)
        bottom = [b + h for b, h in zip(bottom, hours, strict=True)]
    by_day.set_title(f"{title}: GPU-hours by day (UTC), stacked by GPU type")
    by_day.set_ylabel("GPU-hours")
    if data.hours_by_type:
        by_day.legend()
    width = 0.27
    for i, series in enumerate(WAIT_SERIES):
        positions = [x + (i - 1) * width for x in range(len(data.wait_types))]
        by_wait.bar(positions, data.waits[series], width, label=series.removesuffix("_minutes"))
    by_wait.set_xticks(range(len(data.wait_types)), data.wait_types)
    by_wait.set_title("Queue wait by GPU type (submission to grant)")
    by_wait.set_ylabel("minutes")
    if data.wait_types:
        by_wait.legend()
    return figure


def save_chart(report: dict[str, Any], path: Path) -> None:
    figure = usage_figure(chart_data(report), f"GPU usage of {report['scope']}")
    try:
        figure.savefig(path, format="png")
    except OSError as error:
        raise CliError(f"cannot write the chart to {path}: {error.strerror or error}") from error
