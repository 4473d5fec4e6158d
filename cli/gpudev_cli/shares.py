"""The network shares in the CLI (docs/shared-files.md): `show`'s mounts of a reservation
and `disk list`'s line on the personal share, from the API (`/v1/reservations/<id>/mounts`,
`/v1/shares`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpudev_cli import utilisation
from gpudev_cli.client import SigV4Client
from gpudev_cli.context import console


def with_mounts(client: SigV4Client, r: dict[str, Any]) -> dict[str, Any]:
    """The reservation with `mounts`: what each of its pods mounts where."""
    r["mounts"] = client.request("GET", f"/v1/reservations/{r['reservation_id']}/mounts")["mounts"]
    return r


def _said(m: dict[str, Any]) -> str:
    if m["what"] == "named disk":
        return f"named disk {m['disk_name']}"
    if m["what"] == "pod disk":
        return "the pod's disk (no named disk: not kept)"
    if m["what"] == "node disk":
        return "the node's local disk (scratch: gone at the end)"
    if m["what"] == "personal share":
        point = m.get("access_point_id") or "made at the first start"
        return f"your personal share (EFS access point {point})"
    return "the team share"


def mounts_table(r: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title="Mounts", show_edge=False, pad_edge=False)
    for column in ("Path", "What", "Nodes", "Mode"):
        table.add_column(column)
    for m in r.get("mounts") or []:
        mode = "read-only" if m["mode"] == "ro" else "read-write"
        table.add_row(m["path"], _said(m), m["nodes"], mode)
    console.print(table)


def panel(failure_log: str | None) -> Callable[[dict[str, Any]], None]:
    """`show`'s render: the reservation's panel and GPU use, then its mounts."""

    def render(r: dict[str, Any]) -> None:
        utilisation.panel(r, failure_log)
        mounts_table(r)

    return render


def size(value: int) -> str:
    """Bytes in binary units, one decimal from KiB up."""
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def share_lines(shares: dict[str, Any]) -> list[str]:
    """`disk list`'s lines under the table: the personal share and its usage as EFS meters
    it (the whole file system's: EFS meters no access point alone), and the team share."""
    personal = shares.get("personal")
    if personal is None:
        return ["Personal share: none (the deployment has no shared file system)."]
    point = personal.get("access_point_id") or "made at your first reservation"
    lines = [f"Personal share {personal['mount_path']}: access point {point}."]
    usage = personal.get("usage")
    if usage is None:
        lines.append("  Usage: unknown (EFS did not answer).")
    else:
        when = f", metered {str(usage['metered_at'])[:16]} UTC" if usage["metered_at"] else ""
        lines.append(
            f"  Usage: {size(usage['metered_bytes'])} on file system {usage['file_system_id']}"
            f" (the whole file system, every user's share and the team's{when}; "
            "EFS meters no access point alone)."
        )
    team = shares.get("team")
    if team is not None:
        mode = "read-only" if team["mode"] == "ro" else "read-write"
        lines.append(f"Team share {team['mount_path']}: {mode}.")
    return lines


def print_share_lines(client: SigV4Client) -> None:
    for line in share_lines(client.request("GET", "/v1/shares")):
        console.print(line, highlight=False)
