"""`gpu-dev disk …`: named persistent disks that follow you between reservations."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from gpudev_cli.context import Context, console, interactive, short


def _status(d: dict[str, Any]) -> str:
    if d["is_deleted"]:
        return f"[red]deleted[/] (snapshots kept until {d['delete_date']})"
    if d["in_use"]:
        return f"[yellow]in use[/] by {short(str(d['reservation_id']))}"
    if d.get("operation_status") in ("requested", "running"):
        return "[yellow]being prepared[/]"
    if d.get("operation_status") == "failed":
        return f"[red]failed[/]: {d.get('operation_error') or 'unknown error'}"
    return "[green]available[/]"


def _table(disks: list[dict[str, Any]]) -> None:
    if not disks:
        console.print("No disks. Create one with `gpu-dev disk create NAME`.")
        return
    table = Table(title="Your persistent disks")
    for column in ("Name", "Size", "Snapshots", "Last used", "Created", "Status"):
        table.add_column(column)
    for d in disks:
        table.add_row(
            d["disk_name"],
            f"{d['size_gb']} GB" if d.get("size_gb") else "default",
            str(d["snapshot_count"]),
            (d.get("last_used") or "never")[:16].replace("T", " "),
            d["created_at"][:16].replace("T", " "),
            _status(d),
        )
    console.print(table)


def _panel(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['disk_name']}[/]  {_status(d)}\n"
        f"size: {d['size_gb'] or 'default'} GB   snapshots: {d['snapshot_count']}   "
        f"created: {d['created_at'][:16].replace('T', ' ')}"
    )


@click.group()
def disk() -> None:
    """Named persistent disks: create, list, show, delete, rename."""


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
    """Your disks (without the ones marked for deletion)."""
    obj.emit(obj.client().request("GET", "/v1/disks")["disks"], _table)


@disk.command("show")
@click.argument("name")
@click.pass_obj
def show(obj: Context, name: str) -> None:
    """One disk in full."""
    obj.emit(obj.client().request("GET", f"/v1/disks/{name}"), _panel)


@disk.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="do not ask for confirmation")
@click.option("--interactive/--no-interactive", "interactive_flag", default=None)
@click.pass_obj
def delete(obj: Context, name: str, yes: bool, interactive_flag: bool | None) -> None:
    """Delete a disk; its snapshots are kept for 30 days."""
    if not yes:
        if not interactive(interactive_flag):
            raise click.UsageError("deleting a disk needs --yes when not run interactively")
        click.confirm(f"Delete disk {name}? Its snapshots are kept for 30 days", abort=True)
    result = obj.client().request("DELETE", f"/v1/disks/{name}")
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
    result = obj.client().request("POST", f"/v1/disks/{name}/rename", {"new_name": new_name})
    obj.emit(result, lambda d: console.print(f"Disk {name} is now {d['disk_name']}."))
