"""`gpu-dev usage --chart`: the series drawn are the report's (GPU-hours per UTC day stacked by
type, waits per type), the file read back is a PNG of the figure's size, and matplotlib is
imported only when a chart is asked for. Plus the CLI's own checks of --since/--until."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpudev_cli.charts import chart_data, save_chart, usage_figure
from gpudev_cli.main import cli
from gpudev_cli.usage_render import totals_csv

REPORT: dict[str, Any] = {
    "since": "2026-11-20T00:00:00Z",
    "until": "2026-11-23T00:00:00Z",
    "as_of": "2026-11-22T12:00:00Z",
    "scope": "everyone",
    "by": "type",
    "totals": [{"key": "h100", "gpu_hours": 42.0}, {"key": "t4", "gpu_hours": 2.8333}],
    "gpu_hours": [
        {"username": "alice", "gpu_type": "h100", "day": "2026-11-20", "gpu_hours": 10.0,
         "reservations": 2},
        {"username": "alice", "gpu_type": "h100", "day": "2026-11-21", "gpu_hours": 8.0,
         "reservations": 1},
        {"username": "bob", "gpu_type": "h100", "day": "2026-11-21", "gpu_hours": 24.0,
         "reservations": 1},
        {"username": "bob", "gpu_type": "t4", "day": "2026-11-22", "gpu_hours": 2.8333,
         "reservations": 1},
    ],
    "queue_waits": [
        {"gpu_type": "h100", "granted": 2, "still_waiting": 0, "never_granted": 1,
         "p50_minutes": 45.0, "p90_minutes": 57.0, "max_minutes": 60.0},
        {"gpu_type": "t4", "granted": 0, "still_waiting": 1, "never_granted": 0,
         "p50_minutes": None, "p90_minutes": None, "max_minutes": None},
    ],
    "outcomes": [],
    "utilisation": [],
}  # fmt: skip


def test_the_chart_data_are_the_reports_series_on_every_day_of_the_window():
    data = chart_data(REPORT)
    assert [d.isoformat() for d in data.days] == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert data.hours_by_type == {"h100": [10.0, 32.0, 0.0], "t4": [0.0, 0.0, 2.8333]}
    assert data.wait_types == ["h100", "t4"]
    assert data.waits == {
        "p50_minutes": [45.0, 0.0],
        "p90_minutes": [57.0, 0.0],
        "max_minutes": [60.0, 0.0],
    }


def test_the_figure_stacks_gpu_hours_by_type_and_draws_the_waits():
    by_day, by_wait = usage_figure(chart_data(REPORT), "test").axes
    stacks = {c.get_label(): c for c in by_day.containers}
    assert [b.get_height() for b in stacks["h100"]] == [10.0, 32.0, 0.0]
    assert [b.get_height() for b in stacks["t4"]] == pytest.approx([0.0, 0.0, 2.8333])
    assert [b.get_y() for b in stacks["t4"]] == [10.0, 32.0, 0.0]  # on top of h100
    waits = {c.get_label(): [b.get_height() for b in c] for c in by_wait.containers}
    assert waits == {"p50": [45.0, 0.0], "p90": [57.0, 0.0], "max": [60.0, 0.0]}
    assert [t.get_text() for t in by_wait.get_xticklabels()] == ["h100", "t4"]


def test_the_chart_file_reads_back_as_a_png_of_the_figure(tmp_path: Path):
    from matplotlib.image import imread

    path = tmp_path / "usage.png"
    save_chart(REPORT, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    assert pixels.shape == (800, 1100, 4)  # 11 x 8 inches at 100 dpi, RGBA
    assert pixels[..., :3].std() > 0.05  # something was drawn, not a blank canvas


def test_an_unwritable_chart_path_is_one_clear_error(tmp_path: Path):
    from gpudev_cli.client import CliError

    with pytest.raises(CliError, match="cannot write the chart to"):
        save_chart(REPORT, tmp_path / "missing" / "usage.png")


def test_matplotlib_is_imported_only_for_a_chart():
    code = "import sys, gpudev_cli.main; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_csv_gives_the_totals_of_the_grouping():
    assert totals_csv(REPORT) == "type,gpu_hours\nh100,42.0000\nt4,2.8333\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "2026-11-22", "--until", "2026-11-21"], "--since must be before --until"),
        (["--since", "yesterday"], "'yesterday' is not a date"),
        (["--by", "week"], "'week' is not one of"),
        (["--output", "xml"], "'xml' is not one of"),
    ],
)
def test_bad_usage_options_are_refused_before_any_request(args: list[str], message: str):
    result = CliRunner().invoke(cli, ["--api-url", "http://127.0.0.1:9", "usage", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_admin_cancel_needs_a_reason():
    result = CliRunner().invoke(cli, ["--api-url", "http://127.0.0.1:9", "admin", "cancel", "x"])
    assert result.exit_code == 2 and "Missing option '--reason'" in result.output
