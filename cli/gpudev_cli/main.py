"""`gpu-dev`: reserve GPU dev servers. Every request is signed with your AWS credentials."""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from gpudev_cli.client import ApiClient, CliError
from gpudev_cli.config import ConfigError, config_path, load, resolve_api_url, save

LIVE = ("pending", "queued", "preparing", "active")
FINAL = ("cancelled", "expired", "failed")
console = Console()


@dataclass
class Context:
    api_url_flag: str | None
    profile: str | None
    region: str | None
    output: str

    def client(self) -> ApiClient:
        api_url, _ = resolve_api_url(self.api_url_flag)
        settings = load()
        return ApiClient(
            api_url, self.profile or settings.get("profile"), self.region or settings.get("region")
        )

    def emit(self, data: Any, render: Any) -> None:
        if self.output == "json":
            click.echo(json.dumps(data, indent=2, default=str))
        else:
            render(data)


class Group(click.Group):
    """Turns every expected failure into one line on stderr and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (CliError, ConfigError) as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(1)


@click.group(cls=Group, context_settings={"help_option_names": ["--help"]})
@click.version_option(version("gpu-dev"), prog_name="gpu-dev")
@click.option("--api-url", help="gpu-dev API URL (else $GPU_DEV_API_URL, else the config file)")
@click.option("--profile", help="AWS profile (default: the standard credential chain)")
@click.option("--region", help="AWS region for signing")
@click.option(
    "--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_context
def cli(
    ctx: click.Context, api_url: str | None, profile: str | None, region: str | None, output: str
) -> None:
    ctx.obj = Context(api_url, profile, region, output)


def short(reservation_id: str) -> str:
    return reservation_id[:8]


def _gpus(r: dict[str, Any]) -> str:
    return r["gpu_type"] if r["gpu_count"] == 0 else f"{r['gpu_count']}x {r['gpu_type']}"


def _reservations_table(rows: list[dict[str, Any]]) -> None:
    table = Table(title="GPU Reservations")
    for column in ("ID", "Name", "GPUs", "Status", "Hours", "Created", "Expires"):
        table.add_column(column)
    colours = {"active": "green", "failed": "red", "queued": "yellow", "pending": "yellow"}
    for r in rows:
        status = r["status"] + (
            " (cancel requested)" if r.get("cancel_requested_at") and r["status"] in LIVE else ""
        )
        table.add_row(
            short(r["reservation_id"]),
            r.get("name") or "",
            _gpus(r),
            f"[{colours.get(r['status'], 'dim')}]{status}[/]",
            f"{r['duration_hours']:g}",
            r["created_at"][:16].replace("T", " "),
            (r.get("expires_at") or "")[:16].replace("T", " "),
        )
    console.print(table if rows else "No reservations.")


def _show(r: dict[str, Any]) -> None:
    lines = [
        f"[bold]{short(r['reservation_id'])}[/] {r.get('name') or ''}  {r['status']}",
        f"GPUs: {_gpus(r)}   hours: {r['duration_hours']:g}   id: {r['reservation_id']}",
    ]
    if r.get("queue_position"):
        lines.append(f"Queue: #{r['queue_position']}, about {r.get('estimated_wait_minutes')} min")
    if r.get("ssh_command"):
        lines.append(f"Connect: {r['ssh_command']}")
    if r.get("failure_reason"):
        lines.append(f"[red]Failed: {r['failure_reason']}[/]")
    if r.get("cancel_requested_at") and r["status"] in LIVE:
        lines.append("Cancel requested.")
    console.print("\n".join(lines))


@cli.command()
@click.option("--gpu-type", "-t", required=True, help="e.g. h100, t4, cpu-x86 (see `avail`)")
@click.option(
    "--gpus",
    "-g",
    type=int,
    default=1,
    show_default=True,
    help="GPU count (0 for CPU types; multiples of 8 for multinode)",
)
@click.option(
    "--hours",
    "-h",
    type=float,
    default=8.0,
    show_default=True,
    help="5 minutes (0.0833) to 24; fractions allowed",
)
@click.option("--name", help="a name to recognise it by")
@click.option("--disk", help="a named persistent disk, or 'none'")
@click.option("--jupyter", is_flag=True, help="start Jupyter Lab in the pod")
@click.option("--github-user", help="GitHub user whose SSH keys may log in")
@click.option("--no-wait", is_flag=True, help="return as soon as the request is accepted")
@click.pass_obj
def reserve(
    obj: Context,
    gpu_type: str,
    gpus: int,
    hours: float,
    name: str | None,
    disk: str | None,
    jupyter: bool,
    github_user: str | None,
    no_wait: bool,
) -> None:
    """Reserve GPUs and (unless --no-wait) follow the reservation until it is ready."""
    client = obj.client()
    body = {
        "gpu_type": gpu_type,
        "gpu_count": gpus,
        "hours": hours,
        "name": name,
        "disk_name": None if disk in (None, "none") else disk,
        "jupyter": jupyter,
        "github_user": github_user or load().get("github_user"),
        "client_request_id": uuid.uuid4().hex,  # a retried call never reserves twice
    }
    reservation = client.request("POST", "/v1/reservations", body)
    if no_wait or obj.output == "json":
        obj.emit(
            reservation,
            lambda r: console.print(
                f"Reservation {short(r['reservation_id'])} accepted ({r['status']}). "
                f"Follow it with `gpu-dev show {short(r['reservation_id'])}`."
            ),
        )
        return
    _follow(client, reservation)


def _follow(client: ApiClient, reservation: dict[str, Any]) -> None:
    rid = reservation["reservation_id"]
    started = time.monotonic()
    try:
        with console.status("") as status:
            while reservation["status"] not in ("active", *FINAL):
                elapsed = int(time.monotonic() - started)
                detail = reservation.get("current_detailed_status") or reservation["status"]
                if reservation.get("queue_position"):
                    detail = (
                        f"#{reservation['queue_position']} in queue, about "
                        f"{reservation.get('estimated_wait_minutes')} min"
                    )
                status.update(f"[{elapsed // 60}m{elapsed % 60:02d}s] {detail}")
                time.sleep(1 if reservation["status"] != "queued" else 3)
                reservation = client.request("GET", f"/v1/reservations/{rid}")
    except KeyboardInterrupt:
        if sys.stdin.isatty() and click.confirm(f"\nCancel reservation {short(rid)}?"):
            client.request("POST", f"/v1/reservations/{rid}/cancel")
            console.print(f"Cancellation of {short(rid)} requested.")
        else:
            console.print(
                f"\nReservation {short(rid)} continues; `gpu-dev cancel {short(rid)}` stops it."
            )
        return
    _show(reservation)
    if reservation["status"] != "active":
        sys.exit(1)


@cli.command("list")
@click.option("--all", "show_all", is_flag=True, help="include every ended reservation")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([*LIVE, *FINAL]),
    help="only these statuses (repeatable)",
)
@click.pass_obj
def list_(obj: Context, show_all: bool, statuses: tuple[str, ...]) -> None:
    """Your reservations: live ones and those that ended in the last hour."""
    query = "&".join([f"status={s}" for s in statuses] + ["limit=500"])
    rows = obj.client().request("GET", f"/v1/reservations?{query}")["reservations"]
    if not show_all and not statuses:
        cutoff = time.time() - 3600
        rows = [r for r in rows if r["status"] in LIVE or _ended_after(r, cutoff)]
    obj.emit(rows, _reservations_table)


def _ended_after(r: dict[str, Any], cutoff: float) -> bool:
    from datetime import datetime

    ended: str | None = r.get("reservation_ended")
    return ended is not None and datetime.fromisoformat(ended).timestamp() >= cutoff


@cli.command()
@click.argument("reservation_id")
@click.pass_obj
def show(obj: Context, reservation_id: str) -> None:
    """Everything about one reservation (full id or 8-character prefix)."""
    obj.emit(obj.client().request("GET", f"/v1/reservations/{reservation_id}"), _show)


@cli.command()
@click.argument("reservation_id")
@click.pass_obj
def cancel(obj: Context, reservation_id: str) -> None:
    """Cancel a reservation (full id or 8-character prefix)."""
    result = obj.client().request("POST", f"/v1/reservations/{reservation_id}/cancel")
    obj.emit(
        result, lambda r: console.print(f"Cancellation of {short(r['reservation_id'])} requested.")
    )


def _availability_table(types: list[dict[str, Any]]) -> None:
    table = Table(title="GPU availability (numbers are GPUs; CPU types: user slots)")
    for column in ("Type", "Available", "Max reservable", "Total", "Queue", "Est. wait", "Updated"):
        table.add_column(column)
    for t in types:
        per_node = t["max_per_node"] or 3
        colour = (
            "red"
            if t["available_gpus"] == 0
            else ("green" if t["available_gpus"] >= per_node else "yellow")
        )
        wait = t.get("estimated_wait_minutes")
        table.add_row(
            t["gpu_type"],
            f"[{colour}]{t['available_gpus']}[/]",
            str(t["max_reservable"]),
            str(t["total_cluster_gpus"]),
            str(t["queue_length"]),
            "now" if wait == 0 else ("unknown" if wait is None else f"{wait} min"),
            (t.get("last_availability_update") or "never")[:19].replace("T", " "),
        )
    console.print(table)
    console.print("Reserve with: gpu-dev reserve --gpu-type <type> --gpus <n>")


@cli.command()
@click.option("--watch", is_flag=True, help="refresh every --interval seconds until Ctrl+C")
@click.option("--interval", type=float, default=5.0, show_default=True)
@click.pass_obj
def avail(obj: Context, watch: bool, interval: float) -> None:
    """Live GPU availability per type, with queue lengths."""
    client = obj.client()
    while True:
        obj.emit(client.request("GET", "/v1/gpu/availability")["gpu_types"], _availability_table)
        if not watch:
            return
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return
        console.clear()


@cli.command()
@click.pass_obj
def status(obj: Context) -> None:
    """Cluster totals: GPUs, reservations running and queued."""

    def render(s: dict[str, Any]) -> None:
        table = Table(title="GPU cluster status")
        table.add_column("")
        table.add_column("")
        for label, key in (
            ("Total GPUs", "total_gpus"),
            ("Available GPUs", "available_gpus"),
            ("GPUs reserved", "gpus_in_use"),
            ("GPUs queued", "queued_gpus"),
            ("Running reservations", "active_reservations"),
            ("Queued reservations", "queued_reservations"),
        ):
            table.add_row(label, str(s[key]))
        console.print(table)

    obj.emit(obj.client().request("GET", "/v1/cluster/status"), render)


@cli.group()
def config() -> None:
    """Show or change the CLI's settings."""


@config.command("show")
@click.pass_obj
def config_show(obj: Context) -> None:
    settings = load()
    try:
        api_url, source = resolve_api_url(obj.api_url_flag)
    except ConfigError:
        api_url, source = "(not set)", ""
    data = {
        **settings,
        "api_url": api_url,
        "api_url_source": source,
        "config_file": str(config_path()),
    }
    obj.emit(data, lambda d: console.print("\n".join(f"{k}: {v}" for k, v in d.items())))


@config.command("set")
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    path = save(key, value)
    console.print(f"{key} saved to {path}")


def main() -> None:
    cli()
