"""GPU use in the CLI: `list`'s GPU-use column (the last 15 clock minutes of each active
reservation, one call for all), `show`'s last hour per GPU, and `edit --idle-timeout`'s
reply (docs/utilisation.md)."""

from __future__ import annotations

from typing import Any

from gpudev_cli import render
from gpudev_cli.client import SigV4Client
from gpudev_cli.context import console

BARS = " ▁▂▃▄▅▆▇█"


def attach_recent_use(client: SigV4Client, rows: list[dict[str, Any]]) -> None:
    """Each active row gets `gpu_use_percent` (None: no sample yet), from one call."""
    if not any(r["status"] == "active" for r in rows):
        return
    recent = client.request("GET", "/v1/utilisation")["reservations"]
    use = {u["reservation_id"]: u["util_percent"] for u in recent}
    for r in rows:
        if r["status"] == "active":
            r["gpu_use_percent"] = use.get(r["reservation_id"])


def with_use(client: SigV4Client, r: dict[str, Any]) -> dict[str, Any]:
    """An active reservation with GPUs gets `utilisation`: its last clock hour per GPU."""
    if r["status"] == "active" and r.get("gpu_count"):
        r["utilisation"] = client.request(
            "GET", f"/v1/reservations/{r['reservation_id']}/utilisation"
        )
    return r


def panel(r: dict[str, Any], failure_log: str | None) -> None:
    """`show`: the reservation's panel, then its GPU use."""
    render.reservation_panel(r, failure_log)
    if "utilisation" in r:
        use_table(r["utilisation"])


def sparkline(values: list[float], width: int = 30) -> str:
    """The newest `width` values, 0-100, as block characters."""
    return "".join(BARS[min(8, round(v / 100 * 8))] for v in values[-width:])


def use_table(use: dict[str, Any]) -> None:
    """The last clock hour per GPU: mean and peak utilisation, memory, and a sparkline."""
    if not use["gpus"]:
        console.print("GPU use: no sample yet (the updater reads the GPUs once a minute)")
        return
    from rich.table import Table

    table = Table(title=f"GPU use, last {use['minutes']} min", show_edge=False, pad_edge=False)
    for column in ("GPU", "Util (mean/peak)", "Memory (now/peak)", "Util over time"):
        table.add_column(column, no_wrap=column != "Util over time")
    for gpu in use["gpus"]:
        table.add_row(
            gpu["gpu"],
            f"{gpu['mean_util_percent']:.0f}% / {gpu['peak_util_percent']:.0f}%",
            f"{gpu['memory_used_mib'] / 1024:.1f} / {gpu['peak_memory_used_mib'] / 1024:.1f} GiB",
            sparkline([s["util_percent"] for s in gpu["samples"]]),
        )
    console.print(table)


def set_idle_timeout(client: SigV4Client, path: str, text: str) -> dict[str, Any]:
    """`edit --idle-timeout`: the reservation as the API answers the change."""
    body = {"idle_timeout": text.strip().lower()}  # `2H`, ` none` as the API spells them
    return dict(client.request("PUT", f"{path}/idle-timeout", body))


def changed(r: dict[str, Any]) -> None:
    console.print(
        f"Idle timeout of {r['reservation_id'][:8]}: {render.idle_timeout_words(r)}; its idle "
        "clock restarts now (applied at the next minute's check)."
    )
