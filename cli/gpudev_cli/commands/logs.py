"""`gpu-dev logs`: what a reservation's pods printed (`GET /v1/reservations/{id}/logs`, read
from CloudWatch Logs), oldest first; `--follow` keeps printing new lines until the
reservation ends."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

import click

from gpudev_cli import lookup
from gpudev_cli.client import SigV4Client, TryAgainLater
from gpudev_cli.context import FINAL, Context, short
from gpudev_cli.timeline import OPERATOR, OWNER

PAGE = 500  # the route's bound
# --follow: ask again after 1 s, doubling while nothing new arrives, never more than 10 s.
FIRST_WAIT_SECONDS = 1.0
LONGEST_WAIT_SECONDS = 10.0
# Each node's Fluent Bit sends on its own (every 5 s, later when CloudWatch is slow), so a
# line stamped before the newest one printed can still arrive: --follow reads again from
# this long before the newest line, and skips the lines of that window it already printed.
LATE_LINES_WINDOW = timedelta(seconds=30)


@click.command()
@click.argument("reservation")
@click.option(
    "--node",
    type=click.IntRange(min=0),
    help="only this node's pod (0 is the first); every node if not given",
)
@click.option(
    "--since",
    help="from this long ago (30s, 10m, 2h, 1d) or this ISO 8601 time; from the start if not given",
)
@click.option(
    "--follow", "-f", is_flag=True, help="keep printing new lines until it ends (Ctrl+C stops)"
)
@click.pass_obj
def logs(obj: Context, reservation: str, node: int | None, since: str | None, follow: bool) -> None:
    """What a reservation's pods printed (its id, 8-character id prefix, or name): the
    start-up steps, then whatever runs in the pod writes to its console."""
    client = obj.client()
    found = lookup.find(client, reservation)
    rid = found["reservation_id"]
    several = found.get("total_nodes", 1) > 1 and node is None
    printed = 0
    recent: dict[str, datetime] = {}  # --follow: the lines printed, by id, with their time
    try:
        for line in _lines(client, rid, node, since):
            _print(obj, line, several)
            printed += 1
            if follow:
                recent[line["id"]] = _moment(line)
                if len(recent) > PAGE:
                    recent = _within_window(recent)
        if not follow:
            if not printed and obj.output != "json":
                click.echo(f"No log lines for {short(rid)} yet.", err=True)
            return
        _follow(obj, client, rid, node, since, _within_window(recent), several)
    except KeyboardInterrupt:
        click.echo("\nStopped following.", err=True)


def _lines(
    client: SigV4Client, rid: str, node: int | None, since: str | None, root: str = OWNER
) -> Iterator[dict[str, Any]]:
    """Every line from `since`, page after page (`root`: the owner's routes or, for
    `gpu-dev admin logs`, the operators')."""
    query: dict[str, Any] = {"limit": PAGE}
    if node is not None:
        query["node"] = node
    if since is not None:
        query["since"] = since
    while True:
        page = client.request("GET", f"{root}/{quote(rid, safe='')}/logs?{urlencode(query)}")
        yield from page["lines"]
        if page["next"] is None:
            return
        query = {"limit": PAGE, "next": page["next"]} | ({} if node is None else {"node": node})


def _follow(
    obj: Context,
    client: SigV4Client,
    rid: str,
    node: int | None,
    since: str | None,
    recent: dict[str, datetime],
    several: bool,
) -> None:
    """Ask again from LATE_LINES_WINDOW before the newest line printed (`recent`: the lines
    printed in that window, by id, which are not printed twice) with a growing wait, until
    the reservation has ended and a last read found nothing new."""
    wait = FIRST_WAIT_SECONDS
    ended = False
    while True:
        start = _window_start(recent).isoformat() if recent else since
        try:
            read = list(_lines(client, rid, node, start))
        except TryAgainLater as busy:  # CloudWatch Logs throttled past the client's waits
            click.echo(f"{busy}; asking again in {LONGEST_WAIT_SECONDS:g} s", err=True)
            wait = LONGEST_WAIT_SECONDS
            time.sleep(wait)
            continue
        new = [line for line in read if line["id"] not in recent]
        for line in new:
            _print(obj, line, several)
            recent[line["id"]] = _moment(line)
        if new:
            recent, wait = _within_window(recent), FIRST_WAIT_SECONDS
        elif ended:
            click.echo(f"Reservation {short(rid)} has ended.", err=True)
            return
        else:
            wait = min(wait * 2, LONGEST_WAIT_SECONDS)
        if not ended:
            status = client.request("GET", f"/v1/reservations/{rid}")["status"]
            ended = status in FINAL  # one more read picks up its last lines
        time.sleep(wait)


def _moment(line: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(line["timestamp"])


def _window_start(recent: dict[str, datetime]) -> datetime:
    return max(recent.values()) - LATE_LINES_WINDOW


def _within_window(recent: dict[str, datetime]) -> dict[str, datetime]:
    """The lines of `recent` a read from the window's start returns again."""
    if not recent:
        return recent
    start = _window_start(recent)
    return {line_id: at for line_id, at in recent.items() if at >= start}


def operator_lines(obj: Context, reservation_id: str, node: int | None, since: str | None) -> None:
    """`gpu-dev admin logs`: anyone's reservation's lines (full id or 8-character prefix),
    each with its node."""
    printed = 0
    for line in _lines(obj.client(), reservation_id, node, since, OPERATOR):
        _print(obj, line, several=True)
        printed += 1
    if not printed and obj.output != "json":
        click.echo(f"No log lines for {reservation_id[:8]} yet.", err=True)


def _print(obj: Context, line: dict[str, Any], several: bool) -> None:
    if obj.output == "json":
        click.echo(json.dumps(line))  # one object per line: a stream a script can read
        return
    prefix = f"[node {line['node']}] " if several else ""
    click.echo(f"{prefix}{line['message']}")
