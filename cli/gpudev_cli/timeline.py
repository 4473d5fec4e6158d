"""A reservation's timeline (`GET /v1/reservations/{id}/events`): the `events` table, and the
log tail a failed start recorded, which `show` and `reserve` print under the reason."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gpudev_cli.client import SigV4Client
from gpudev_cli.context import console

PAGE = 500  # the route's bound: a timeline is a few dozen entries
OWNER, OPERATOR = "/v1/reservations", "/v1/admin/reservations"  # the two routes' roots


def events(client: SigV4Client, reservation_id: str, root: str = OWNER) -> list[dict[str, Any]]:
    """Every entry of the timeline, oldest first (page after page): the owner's route, or
    with `root=OPERATOR` the operators' (anyone's reservation, by id or 8-character
    prefix)."""
    found: list[dict[str, Any]] = []
    where = f"{root}/{quote(reservation_id, safe='')}/events"
    while True:
        page = client.request("GET", f"{where}?limit={PAGE}&offset={len(found)}")["events"]
        found += page
        if len(page) < PAGE:
            return found


def failure_log(client: SigV4Client, reservation: dict[str, Any]) -> str | None:
    """The log tail a failed start recorded (the last one), None for any other reservation."""
    if reservation["status"] != "failed":
        return None
    logs = [e for e in events(client, reservation["reservation_id"]) if e["kind"] == "pod_log"]
    return logs[-1]["detail"] if logs else None


def events_table(rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Timeline", show_edge=False, pad_edge=False)
    for column in ("At (UTC)", "Kind", "Status", "Detail"):
        table.add_column(column, no_wrap=column != "Detail")
    for e in rows:
        moved = e["from_status"] and e["from_status"] != e["to_status"]
        status = f"{e['from_status']} → {e['to_status']}" if moved else e["to_status"]
        table.add_row(
            e["at"][:19].replace("T", " "), e["kind"], status, escape(e.get("detail") or "")
        )
    console.print(table if rows else "No events.")
