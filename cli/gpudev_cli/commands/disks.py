"""`gpu-dev disk …`: named persistent disks that follow you between reservations."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import click

from gpudev_cli import shares
from gpudev_cli.client import SigV4Client
from gpudev_cli.context import Context, console, interactive, interactive_option, on_stderr, short

DEFAULT_SIZE_GB = 1024  # a disk created without --size-gb (the volume made at first use)


def _path(name: str) -> str:
    """A disk name as one URL path segment: never a `/`, `..` or `?` the server would read."""
    return quote(name, safe="")


def state(d: dict[str, Any]) -> str:
    """In use <id8> / Available / Deleted …, and a pending or failed operation."""
    if d["is_deleted"]:
        return f"[red]Deleted[/] (purged on {d['delete_date']})"
    if d["in_use"]:
        return f"[yellow]In use[/] {short(str(d['reservation_id'] or ''))}".rstrip()
    if d.get("is_backing_up"):
        return "[yellow]Backing up[/]"
    if d.get("operation_status") == "failed":
        return f"[red]Failed[/]: {d.get('operation_error') or 'unknown error'}"
    return "[green]Available[/]"


def _when(value: str | None, never: str = "never") -> str:
    return (value or never)[:16].replace("T", " ")


def _size(d: dict[str, Any]) -> str:
    return f"{d['size_gb']} GB" if d.get("size_gb") else f"{DEFAULT_SIZE_GB} GB"


def _table(disks: list[dict[str, Any]]) -> None:
    if not disks:
        console.print("No disks. Create one with `gpu-dev disk create NAME`.")
        return
    from rich.table import Table

    table = Table(title="Your persistent disks")
    for column in ("Name", "Status", "Snapshots", "Size", "Last used", "Created"):
        table.add_column(column)
    for d in disks:
        table.add_row(
            d["disk_name"],
            state(d),
            str(d["snapshot_count"]),
            _size(d),
            _when(d.get("last_used")),
            _when(d["created_at"]),
        )
    console.print(table)


def _panel(d: dict[str, Any]) -> None:
    operation = d.get("operation_status") or "none"
    if d.get("operation_error"):
        operation += f": {d['operation_error']}"
    console.print(
        f"[bold]{d['disk_name']}[/]  {state(d)}\n"
        f"size: {_size(d)}   snapshots: {d['snapshot_count']}   "
        f"last snapshot: {_when(d.get('last_snapshot_at'))}   "
        f"last used: {_when(d.get('last_used'))}   created: {_when(d['created_at'])}\n"
        f"last operation: {operation}"
        + (f"\nvolume: {d['held_volume_id']}" if d.get("held_volume_id") else "")
    )
    if d.get("lifecycle_error"):
        console.print(f"[red]not saved yet[/]: {d['lifecycle_error']}")


def choose_disk(client: SigV4Client, name: str | None, ask: bool) -> str | None:
    """The disk `reserve` names. On a terminal, without --disk, pick one of your disks (their
    state shown); a disk in use says by which reservation and offers to go on without it."""
    if name == "none" or not ask:
        return None if name == "none" else name
    disks = {d["disk_name"]: d for d in client.request("GET", "/v1/disks")["disks"]}
    if name is None:
        if not disks:
            return None
        with on_stderr():
            _table(list(disks.values()))
        name = click.prompt(
            "Disk (mounted at /home/dev)",
            type=click.Choice([*disks, "none"]),
            default="none",
            err=True,
        )
        if name == "none":
            return None
    chosen = disks.get(name)
    if chosen is not None and chosen["in_use"]:
        holder = short(str(chosen["reservation_id"] or "")) or "another reservation"
        click.confirm(
            f"Disk {name} is in use by reservation {holder}. Continue without a disk?",
            default=False,
            abort=True,
            err=True,
        )
        return None
    return name


@click.group()
def disk() -> None:
    """Named persistent disks: create, list, show, list-content, delete, restore, rename, clone."""


@disk.command("create")
@click.argument("name")
@click.option("--size-gb", type=click.IntRange(1, 16384), help="size (default: the standard size)")
@click.pass_obj
def create(obj: Context, name: str, size_gb: int | None) -> None:
    """Create a disk; reserve with `--disk NAME` to use it."""
    body = {"disk_name": name, "size_gb": size_gb}
    result = obj.client().request("POST", "/v1/disks", body)
    obj.emit(result, lambda d: console.print(f"Disk {d['disk_name']} requested."))


@disk.command("list")
@click.pass_obj
def list_(obj: Context) -> None:
    """Your disks (without the ones marked for deletion), then your personal share and its
    usage as EFS meters it (the table only; JSON is the disks: `/v1/shares` has the rest)."""
    client = obj.client()

    def render(disks: list[dict[str, Any]]) -> None:
        _table(disks)
        shares.print_share_lines(client)

    obj.emit(client.request("GET", "/v1/disks")["disks"], render)


@disk.command("show")
@click.argument("name")
@click.pass_obj
def show(obj: Context, name: str) -> None:
    """One disk in full."""
    obj.emit(obj.client().request("GET", f"/v1/disks/{_path(name)}"), _panel)


@disk.command("list-content")
@click.argument("name")
@click.pass_obj
def list_content(obj: Context, name: str) -> None:
    """What the disk held when the last reservation using it ended (type, bytes, path)."""

    def render(c: dict[str, Any]) -> None:
        if c["content_listed_at"] is None:
            console.print(f"Disk {c['disk_name']}: {c['message']}.")
        else:
            from rich.panel import Panel

            listing = c["content_listing"] or "(empty)"
            console.print(Panel(listing, title=f"{c['disk_name']}: {c['message']}"))

    obj.emit(obj.client().request("GET", f"/v1/disks/{_path(name)}/content"), render)


@disk.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="do not ask for confirmation")
@interactive_option("ask before deleting")
@click.pass_obj
def delete(obj: Context, name: str, yes: bool, interactive_flag: bool | None) -> None:
    """Delete a disk; its snapshots are kept for 30 days."""
    if not yes:
        if not interactive(interactive_flag):
            raise click.UsageError("deleting a disk needs --yes when not run interactively")
        click.confirm(
            f"Delete disk {name}? Its snapshots are kept for 30 days", abort=True, err=True
        )
    result = obj.client().request("DELETE", f"/v1/disks/{_path(name)}")
    obj.emit(
        result,
        lambda d: console.print(
            f"Disk {d['disk_name']} marked for deletion; snapshots kept until {d['delete_date']}."
        ),
    )


@disk.command("rename")
@click.argument("name")
@click.argument("new_name")
@click.pass_obj
def rename(obj: Context, name: str, new_name: str) -> None:
    """Give a disk a new name."""
    result = obj.client().request("POST", f"/v1/disks/{_path(name)}/rename", {"new_name": new_name})
    obj.emit(result, lambda d: console.print(f"Disk {name} is now {d['disk_name']}."))


@disk.command("restore")
@click.argument("name")
@click.pass_obj
def restore(obj: Context, name: str) -> None:
    """Undelete a disk marked for deletion, before its date."""
    result = obj.client().request("POST", f"/v1/disks/{_path(name)}/restore")
    obj.emit(result, lambda d: console.print(f"Disk {d['disk_name']} restored."))


@disk.command("clone")
@click.argument("source")
@click.argument("new_name")
@click.pass_obj
def clone(obj: Context, source: str, new_name: str) -> None:
    """A new disk NEW_NAME from SOURCE's latest completed snapshot."""
    result = obj.client().request(
        "POST", f"/v1/disks/{_path(source)}/clone", {"new_name": new_name}
    )
    obj.emit(
        result,
        lambda d: console.print(
            f"Disk {d['disk_name']} requested from {source}'s latest snapshot; "
            f"`gpu-dev disk show {d['disk_name']}` says when it is ready."
        ),
    )
