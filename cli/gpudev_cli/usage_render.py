"""How the CLI shows a usage report: tables (`--output table`; the window in your local
time, days in UTC as the API counts them) and CSV of the totals (`--output csv`)."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Any

from gpudev_cli.context import console

GROUPING_TITLES = {"user": "User", "type": "GPU type", "day": "Day (UTC)"}


def local(moment: str) -> str:
    """An API instant (UTC) shown in this machine's time zone."""
    return datetime.fromisoformat(moment).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _minutes(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def totals_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report["by"], "gpu_hours"])
    for row in report["totals"]:
        writer.writerow([row["key"], f"{row['gpu_hours']:.4f}"])
    return out.getvalue()


def usage_tables(report: dict[str, Any]) -> None:
    from rich.table import Table  # here: `gpu-dev --help` loads no rich

    console.print(
        f"[bold]GPU usage of {report['scope']}[/] from {local(report['since'])} "
        f"to {local(report['until'])}"
    )
    totals = Table(title=f"GPU-hours by {report['by']}")
    totals.add_column(GROUPING_TITLES[report["by"]])
    totals.add_column("GPU-hours", justify="right")
    for row in report["totals"]:
        totals.add_row(row["key"], f"{row['gpu_hours']:.2f}")
    console.print(totals if report["totals"] else "No GPU-hours in this window.")

    if report["queue_waits"]:
        waits = Table(title="Queue wait (minutes, submission to grant)")
        for column in ("GPU type", "Granted", "Waiting", "Never granted", "p50", "p90", "Max"):
            waits.add_column(column, justify="left" if column == "GPU type" else "right")
        for w in report["queue_waits"]:
            waits.add_row(
                w["gpu_type"], str(w["granted"]), str(w["still_waiting"]),
                str(w["never_granted"]), _minutes(w["p50_minutes"]),
                _minutes(w["p90_minutes"]), _minutes(w["max_minutes"]),
            )  # fmt: skip
        console.print(waits)

    if report["outcomes"]:
        outcomes = Table(title="Ended reservations")
        for column in ("Outcome", "Reason", "While queued", "Count"):
            outcomes.add_column(column)
        for o in report["outcomes"]:
            outcomes.add_row(
                o["outcome"], o["reason"] or "", "yes" if o["while_queued"] else "",
                str(o["reservations"]),
            )  # fmt: skip
        console.print(outcomes)

    if report["utilisation"]:
        fleet = Table(title="Fleet utilisation")
        for column in ("GPU type", "Held GPU-h", "Capacity GPU-h", "Utilisation"):
            fleet.add_column(column, justify="left" if column == "GPU type" else "right")
        for u in report["utilisation"]:
            share = "" if u["utilisation"] is None else f"{u['utilisation']:.1%}"
            fleet.add_row(
                u["gpu_type"], f"{u['held_gpu_hours']:.2f}", f"{u['capacity_gpu_hours']:.2f}",
                share,
            )  # fmt: skip
        console.print(fleet)

    if report.get("gpu_hours_used"):
        console.print(used_vs_held(report))


def used_vs_held(report: dict[str, Any]) -> Any:
    """GPU-hours used (busy per the DCGM exporters) beside held, per user and type; the
    efficiency is used over held."""
    from rich.table import Table

    held: dict[tuple[str, str], float] = {}
    for row in report["gpu_hours"]:
        key = (row["username"], row["gpu_type"])
        held[key] = held.get(key, 0.0) + row["gpu_hours"]
    table = Table(title="GPU-hours used (GPUs busy) beside held")
    for column in ("User", "GPU type", "Held GPU-h", "Used GPU-h", "Efficiency", "Mean util"):
        table.add_column(column, justify="left" if column in ("User", "GPU type") else "right")
    for u in report["gpu_hours_used"]:
        hours = held.get((u["username"], u["gpu_type"]), 0.0)
        share = f"{u['used_gpu_hours'] / hours:.0%}" if hours else ""
        mean = "" if u["mean_util_percent"] is None else f"{u['mean_util_percent']:.0f}%"
        table.add_row(
            u["username"], u["gpu_type"], f"{hours:.2f}", f"{u['used_gpu_hours']:.2f}", share,
            mean,
        )  # fmt: skip
    return table


def live_reservations_table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table  # here: `gpu-dev --help` loads no rich

    table = Table(title="Live reservations (everyone's)")
    for column in ("ID", "User", "GPUs", "Status", "Created", "Expires"):
        table.add_column(column)
    for r in rows:
        gpus = r["gpu_type"] if r["gpu_count"] == 0 else f"{r['gpu_count']}x {r['gpu_type']}"
        status = r["status"] + (" (cancel requested)" if r.get("cancel_requested_at") else "")
        table.add_row(
            r["reservation_id"][:8], r["user_id"], gpus, status, local(r["created_at"]),
            local(r["expires_at"]) if r.get("expires_at") else "",
        )  # fmt: skip
    console.print(table if rows else "No live reservations.")


def dead_letters_table(letters: dict[str, Any]) -> None:
    from rich.table import Table  # here: `gpu-dev --help` loads no rich

    console.print(
        f"Jobs dead-letter queue: {letters['depth']} messages "
        f"({letters['in_flight']} being received)"
    )
    if not letters["messages"]:
        return
    table = Table(title="Recent dead letters")
    for column in ("Sent", "Receives", "Job"):
        table.add_column(column)
    for m in letters["messages"]:
        body = m["body"]
        job = (
            f"{body.get('kind')} {str(body.get('reservation_id') or '')[:8]}".strip()
            if isinstance(body, dict)
            else str(body)[:80]
        )
        table.add_row(local(m["sent_at"]) if m["sent_at"] else "", str(m["receive_count"]), job)
    console.print(table)
