"""`gpu-dev list|show|events|cancel|extend|edit|connect`: the reservations you already have."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

import click

from gpudev_cli import jupyter_tunnel, lookup, render, replies, shares, ssh, timeline, utilisation
from gpudev_cli.client import CliError, SigV4Client
from gpudev_cli.context import (
    FINAL,
    LIVE,
    Context,
    console,
    interactive,
    interactive_option,
    progress,
    short,
    wait_for_refresh,
)


@click.command("list")
@click.option("--all", "show_all", is_flag=True, help="include every ended reservation")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([*LIVE, *FINAL]),
    help="only these statuses (repeatable)",
)
@click.option("--watch", is_flag=True, help="refresh every --interval seconds until Ctrl+C")
@click.option("--interval", type=float, default=5.0, show_default=True)
@click.pass_obj
def list_(
    obj: Context, show_all: bool, statuses: tuple[str, ...], watch: bool, interval: float
) -> None:
    """Your reservations: live ones and those that ended in the last hour."""
    query = "&".join([f"status={s}" for s in statuses] + ["limit=500"])
    client = obj.client()
    while True:
        rows = client.request("GET", f"/v1/reservations?{query}")["reservations"]
        ssh.sync_configs(rows)
        if not show_all and not statuses:
            cutoff = time.time() - 3600
            rows = [r for r in rows if r["status"] in LIVE or _ended_after(r, cutoff)]
        utilisation.attach_recent_use(client, rows)
        obj.emit(rows, render.reservations_table)
        if not wait_for_refresh(watch, interval):
            return


def _ended_after(r: dict[str, Any], cutoff: float) -> bool:
    ended: str | None = r.get("reservation_ended")
    return ended is not None and datetime.fromisoformat(ended).timestamp() >= cutoff


@click.command()
@click.argument("reservation")
@click.pass_obj
def show(obj: Context, reservation: str) -> None:
    """Everything about one reservation: its id, 8-character id prefix, or name; writes its
    SSH config once it is active (and removes it once it has ended)."""
    client = obj.client()
    found = lookup.find(client, reservation)
    ssh.sync_configs([found])
    tail = timeline.failure_log(client, found) if obj.output != "json" else None
    obj.emit(shares.with_mounts(client, utilisation.with_use(client, found)), shares.panel(tail))


@click.command()
@click.argument("reservation")
@click.pass_obj
def events(obj: Context, reservation: str) -> None:
    """A reservation's timeline, oldest first (its id, 8-character id prefix, or name):
    status changes, start-up steps, extensions, the log tail of a failed start."""
    client = obj.client()
    found = lookup.find(client, reservation)
    obj.emit(timeline.events(client, found["reservation_id"]), timeline.events_table)


@click.command()
@click.argument("reservation", required=False)
@click.option("--all", "cancel_all", is_flag=True, help="every live reservation of yours")
@click.option("--yes", "-y", is_flag=True, help="do not ask for confirmation (for scripts)")
@interactive_option("ask before cancelling --all")
@click.pass_obj
def cancel(
    obj: Context,
    reservation: str | None,
    cancel_all: bool,
    yes: bool,
    interactive_flag: bool | None,
) -> None:
    """Cancel a reservation (its id, 8-character id prefix, or name), or --all of yours:
    those are listed and you confirm, unless --yes."""
    if cancel_all == (reservation is not None):
        raise click.UsageError(
            "give a reservation or --all, not both"
            if cancel_all
            else "which reservation? give its id or name, or --all"
        )
    if reservation is not None:
        client = obj.client()
        target = lookup.find(client, reservation)
        result = client.request("POST", f"/v1/reservations/{target['reservation_id']}/cancel")
        ssh.remove_config(result)
        obj.emit(
            result,
            lambda r: console.print(f"Cancellation of {short(r['reservation_id'])} requested."),
        )
        return
    if not yes and not interactive(interactive_flag):
        raise click.UsageError("cancel --all needs --yes when not run interactively")
    _cancel_all(obj, obj.client(), ask=not yes)


def _cancel_all(obj: Context, client: SigV4Client, ask: bool) -> None:
    live = lookup.reservations(client, LIVE)
    if live and ask:  # on stderr: stdout holds only the result (-o json)
        progress.print(f"Your {len(live)} live reservation(s):")
        for r in live:
            progress.print(
                f"  {short(r['reservation_id'])}  {r.get('name') or '-'}  "
                f"{render.gpus(r)}  {r['status']}",
                highlight=False,
            )
        click.confirm(f"Cancel all {len(live)}?", default=False, abort=True, err=True)
    cancelled, failures = [], []
    for r in live:
        try:
            result = client.request("POST", f"/v1/reservations/{r['reservation_id']}/cancel")
        except CliError as error:
            failures.append(f"{short(r['reservation_id'])}: {error}")
            continue
        ssh.remove_config(result)
        cancelled.append(result)
    obj.emit(
        cancelled,
        lambda rows: console.print(
            f"Cancellation of {len(rows)} reservation(s) requested: "
            + ", ".join(short(r["reservation_id"]) for r in rows)
            if rows
            else "You have no live reservations."
        ),
    )
    if failures:
        raise CliError("could not cancel " + "; ".join(failures))


@click.command()
@click.argument("reservation")
@click.option(
    "--hours", "-h", type=float, required=True, help="1 to 24; at most 48 in total since launch"
)
@click.pass_obj
def extend(obj: Context, reservation: str, hours: float) -> None:
    """Give a reservation (its id, 8-character id prefix, or name) more time."""
    client = obj.client()
    _extend(obj, client, lookup.find(client, reservation)["reservation_id"], hours)


def _extend(obj: Context, client: SigV4Client, reservation_id: str, hours: float) -> None:
    result = client.request("POST", f"/v1/reservations/{reservation_id}/extend", {"hours": hours})
    obj.emit(result, lambda r: console.print(replies.extended(r, hours)))


@click.command()
@click.argument("reservation")
@click.option("--extend", "extend_hours", type=float, help="add hours (1 to 24)")
@click.option(
    "--add-user", "github_users", multiple=True, help="GitHub user to let in (repeatable)"
)
@click.option(
    "--remove-user",
    "removed_users",
    multiple=True,
    help="added GitHub user to take out (repeatable): their account, keys and sessions go",
)
@click.option("--enable-jupyter/--disable-jupyter", "jupyter", default=None)
@click.option("--idle-timeout", help="idle GPUs this long: warned, then ended (2h, 90m, none)")
@click.pass_obj
def edit(
    obj: Context,
    reservation: str,
    extend_hours: float | None,
    github_users: tuple[str, ...],
    removed_users: tuple[str, ...],
    jupyter: bool | None,
    idle_timeout: str | None,
) -> None:
    """Change a live reservation (its id, 8-character id prefix, or name): more time, users
    in or out, Jupyter on or off, its idle timeout. Each reply says when the change applies."""
    if (extend_hours, jupyter, idle_timeout, *github_users, *removed_users) == (None,) * 3:
        raise click.UsageError(
            "nothing to change: give --extend, --add-user, --remove-user, --enable-jupyter "
            "or --idle-timeout"
        )
    client = obj.client()
    reservation_id = lookup.find(client, reservation)["reservation_id"]
    path = f"/v1/reservations/{reservation_id}"
    for user in github_users:
        result = client.request("POST", f"{path}/users", {"github_username": user})
        obj.emit(result, lambda r, u=user: console.print(replies.user_added(r, u)))
    for user in removed_users:
        result = client.request("DELETE", f"{path}/users/{quote(user, safe='')}")
        obj.emit(result, lambda r, u=user: console.print(replies.user_removed(r, u)))
    if jupyter is not None:
        result = client.request("PUT" if jupyter else "DELETE", f"{path}/jupyter")
        obj.emit(result, lambda r: console.print(replies.jupyter_changed(r, jupyter)))
    if idle_timeout is not None:
        obj.emit(utilisation.set_idle_timeout(client, path, idle_timeout), utilisation.changed)
    if extend_hours is not None:
        _extend(obj, client, reservation_id, extend_hours)


@click.command()
@click.argument("reservation", required=False)
@click.option(
    "--forward-agent",
    is_flag=True,
    help="Forward your SSH agent into the pod for this session (off by default: anyone who "
    "is root in the pod can use it while you are connected; the owner has passwordless sudo "
    "there, so a collaborator's forwarded agent is usable by the owner, and the owner's by "
    "anything running as root).",
)
@click.option(
    "--jupyter",
    is_flag=True,
    help="Forward a free local port (8888 if free) through SSH to the pod's Jupyter, print "
    "its http://localhost URL and keep the tunnel open until Ctrl+C (Jupyter is reached "
    "only through SSH: its token never crosses the network in cleartext).",
)
@click.option(
    "--node",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="which node of a multinode reservation (0, 1, ...): each has its own SSH endpoint",
)
@click.pass_obj
def connect(
    obj: Context, reservation: str | None, forward_agent: bool, jupyter: bool, node: int
) -> None:
    """SSH into an active reservation (id, id prefix or name; the only one, if you have
    exactly one), or with --jupyter open a tunnel to its Jupyter."""
    if jupyter and forward_agent:
        raise click.UsageError("--forward-agent is for a shell, not for --jupyter")
    if jupyter and node:
        raise click.UsageError("Jupyter runs on node 0 only: drop --node")
    client = obj.client()
    if reservation is None:
        active = client.request("GET", "/v1/reservations?status=active&limit=500")["reservations"]
        ssh.sync_configs(active)
        if len(active) != 1:
            raise CliError(
                "you have no active reservation"
                if not active
                else f"you have {len(active)} active reservations: name one "
                f"({', '.join(short(r['reservation_id']) for r in active)})"
            )
        chosen = active[0]
    else:
        chosen = lookup.find(client, reservation)
        ssh.sync_configs([chosen])  # an ended one's config goes
    if chosen["status"] != "active":
        raise CliError(
            f"reservation {short(chosen['reservation_id'])} is {chosen['status']}, not active"
        )
    if jupyter:
        jupyter_tunnel.open_tunnel(chosen)
    else:
        _ssh(chosen, forward_agent, node)


def _ssh(reservation: dict[str, Any], forward_agent: bool, rank: int = 0) -> None:
    command = ssh.ssh_command(reservation, forward_agent, rank)
    if hint := ssh.address_hint(reservation):
        click.echo(f"note: {reservation['node_ip']}: {hint}", err=True)
    if forward_agent:
        click.echo(f"warning: {ssh.AGENT_WARNING}", err=True)
    click.echo(ssh.printed_command(reservation, forward_agent, rank), err=True)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C belongs to ssh now
    try:
        code = subprocess.call(command)
    finally:
        signal.signal(signal.SIGINT, previous)
    if code == 255:
        raise CliError(
            f"ssh could not connect to {short(reservation['reservation_id'])}; "
            f"check `gpu-dev show {short(reservation['reservation_id'])}` and your SSH keys"
        )
    sys.exit(code)
