"""`gpu-dev`: reserve GPU dev servers. Every request is signed with your AWS credentials."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from importlib.metadata import version
from typing import Any

import click
from rich.table import Table

from gpudev_cli import prompts, render, ssh
from gpudev_cli.client import CliError, SigV4Client
from gpudev_cli.config import ConfigError, config_path, load, resolve_api_url, save
from gpudev_cli.context import FINAL, LIVE, Context, Group, console, interactive, progress, short
from gpudev_cli.disks import choose_disk, disk


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


def _request_body(
    client: SigV4Client,
    ask: bool,
    gpu_type: str | None,
    gpus: int | None,
    hours: float | None,
    distributed: bool,
) -> tuple[str, int, float]:
    """The type, count and hours, asking for the missing ones when a person is there."""
    if gpu_type is None and not ask:
        raise click.UsageError("--gpu-type is required when not run interactively")
    if gpu_type is None:
        types = client.request("GET", "/v1/gpu/availability")["gpu_types"]
        render.availability_table(types)
        chosen = prompts.pick_type(types)
        gpu_type = chosen["gpu_type"]
        if gpus is None:
            gpus = prompts.pick_count(chosen)
    if gpus is None:
        gpus = 0 if gpu_type.lower().startswith("cpu") else 1
    if hours is None:
        hours = prompts.pick_hours() if ask else 8.0
    if gpus > 8 and not distributed:
        if not ask:
            raise click.UsageError(
                f"{gpus} GPUs span {gpus // 8} nodes: add --distributed to confirm multinode"
            )
        click.confirm(
            f"{gpus} GPUs run as {gpus // 8} pods on whole nodes, rendezvous on port 29500. "
            "Continue?",
            abort=True,
        )
    return gpu_type, gpus, hours


@cli.command()
@click.option("--gpu-type", "-t", help="e.g. h100, t4, cpu-x86 (see `avail`)")
@click.option(
    "--gpus", "-g", type=int, help="GPU count (default 1; 0 for CPU types; 16/24/32 multinode)"
)
@click.option("--hours", "-h", type=float, help="5 minutes (0.0833) to 24; fractions allowed")
@click.option("--name", help="a name to recognise it by")
@click.option("--disk", help="a named persistent disk, or 'none'")
@click.option("--jupyter", is_flag=True, help="start Jupyter Lab in the pod")
@click.option(
    "--profiling",
    is_flag=True,
    help="allow profilers in the pod: perf counters, Nsight Systems/Compute and `perf` need "
    "CAP_SYS_ADMIN, which the pod then gets (use it with sudo); off by default, as it "
    "weakens the pod's isolation",
)
@click.option("--distributed", is_flag=True, help="confirm a multinode (more than 8 GPUs) request")
@click.option("--github-user", help="GitHub user whose SSH keys may log in")
@click.option("--no-wait", is_flag=True, help="return as soon as the request is accepted")
@click.option(
    "--interactive/--no-interactive",
    "interactive_flag",
    default=None,
    help="ask for missing values (default: when run in a terminal)",
)
@click.pass_obj
def reserve(
    obj: Context,
    gpu_type: str | None,
    gpus: int | None,
    hours: float | None,
    name: str | None,
    disk: str | None,
    jupyter: bool,
    profiling: bool,
    distributed: bool,
    github_user: str | None,
    no_wait: bool,
    interactive_flag: bool | None,
) -> None:
    """Reserve GPUs and (unless --no-wait) follow the reservation until it is ready."""
    client = obj.client()
    ask = interactive(interactive_flag)
    gpu_type, gpus, hours = _request_body(client, ask, gpu_type, gpus, hours, distributed)
    disk = choose_disk(client, disk, ask)
    body = {
        "gpu_type": gpu_type,
        "gpu_count": gpus,
        "hours": hours,
        "name": name,
        "disk_name": disk,
        "jupyter": jupyter,
        "profiling": profiling,
        "github_user": github_user or load().get("github_user"),
        "client_request_id": uuid.uuid4().hex,  # a retried call never reserves twice
    }
    reservation = client.request("POST", "/v1/reservations", body)
    if no_wait:
        obj.emit(
            reservation,
            lambda r: console.print(
                f"Reservation {short(r['reservation_id'])} accepted ({r['status']}). "
                f"Follow it with `gpu-dev show {short(r['reservation_id'])}`."
            ),
        )
        return
    final = _follow(client, reservation, ask)
    if final is None:
        return
    if final["status"] == "active":
        ssh.write_config(final)
    obj.emit(final, render.reservation_panel_with_connect)
    if final["status"] != "active":
        sys.exit(1)


POLL_SECONDS = {"queued": 3.0}


def _follow(client: SigV4Client, reservation: dict[str, Any], ask: bool) -> dict[str, Any] | None:
    """Poll until active or ended, showing progress; None if the user stopped waiting."""
    rid = reservation["reservation_id"]
    started = time.monotonic()
    try:
        with progress.status("") as status:
            while reservation["status"] not in ("active", *FINAL):
                elapsed = int(time.monotonic() - started)
                detail = reservation.get("current_detailed_status") or reservation["status"]
                if reservation.get("queue_position"):
                    detail = (
                        f"#{reservation['queue_position']} in queue, about "
                        f"{reservation.get('estimated_wait_minutes')} min"
                    )
                status.update(f"[{elapsed // 60}m{elapsed % 60:02d}s] {detail}")
                time.sleep(POLL_SECONDS.get(reservation["status"], 1.0))
                reservation = client.request("GET", f"/v1/reservations/{rid}")
    except KeyboardInterrupt:
        if ask and click.confirm(f"\nCancel reservation {short(rid)}?", default=False):
            client.request("POST", f"/v1/reservations/{rid}/cancel")
            click.echo(f"Cancellation of {short(rid)} requested.", err=True)
        else:
            click.echo(
                f"\nStopped waiting; reservation {short(rid)} continues. "
                f"`gpu-dev show {short(rid)}` follows it, `gpu-dev cancel {short(rid)}` stops it.",
                err=True,
            )
        return None
    return reservation


@cli.command("list")
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
        if not show_all and not statuses:
            cutoff = time.time() - 3600
            rows = [r for r in rows if r["status"] in LIVE or _ended_after(r, cutoff)]
        obj.emit(rows, render.reservations_table)
        if not _wait_for_refresh(watch, interval):
            return


def _wait_for_refresh(watch: bool, interval: float) -> bool:
    if not watch:
        return False
    try:
        time.sleep(interval)
    except KeyboardInterrupt:
        return False
    console.clear()
    return True


def _ended_after(r: dict[str, Any], cutoff: float) -> bool:
    ended: str | None = r.get("reservation_ended")
    return ended is not None and datetime.fromisoformat(ended).timestamp() >= cutoff


@cli.command()
@click.argument("reservation_id")
@click.pass_obj
def show(obj: Context, reservation_id: str) -> None:
    """Everything about one reservation (full id or 8-character prefix)."""
    obj.emit(
        obj.client().request("GET", f"/v1/reservations/{reservation_id}"), render.reservation_panel
    )


@cli.command()
@click.argument("reservation_id")
@click.pass_obj
def cancel(obj: Context, reservation_id: str) -> None:
    """Cancel a reservation (full id or 8-character prefix)."""
    result = obj.client().request("POST", f"/v1/reservations/{reservation_id}/cancel")
    ssh.remove_config(result)
    obj.emit(
        result, lambda r: console.print(f"Cancellation of {short(r['reservation_id'])} requested.")
    )


def _extend(obj: Context, client: SigV4Client, reservation_id: str, hours: float) -> None:
    result = client.request("POST", f"/v1/reservations/{reservation_id}/extend", {"hours": hours})
    obj.emit(
        result,
        lambda r: console.print(
            f"Extended {short(r['reservation_id'])} by {hours:g} h "
            f"({r['duration_hours']:g} h in total); the new expiry applies within seconds."
        ),
    )


@cli.command()
@click.argument("reservation_id")
@click.option(
    "--hours", "-h", type=float, required=True, help="1 to 24; at most 48 in total since launch"
)
@click.pass_obj
def extend(obj: Context, reservation_id: str, hours: float) -> None:
    """Give a reservation more time."""
    _extend(obj, obj.client(), reservation_id, hours)


@cli.command()
@click.argument("reservation_id")
@click.option("--extend", "extend_hours", type=float, help="add hours (1 to 24)")
@click.option(
    "--add-user", "github_users", multiple=True, help="GitHub user to let in (repeatable)"
)
@click.option("--enable-jupyter/--disable-jupyter", "jupyter", default=None)
@click.pass_obj
def edit(
    obj: Context,
    reservation_id: str,
    extend_hours: float | None,
    github_users: tuple[str, ...],
    jupyter: bool | None,
) -> None:
    """Change a live reservation: more time, more users, Jupyter on or off."""
    if extend_hours is None and not github_users and jupyter is None:
        raise click.UsageError("nothing to change: give --extend, --add-user or --enable-jupyter")
    client = obj.client()
    path = f"/v1/reservations/{reservation_id}"
    for user in github_users:
        result = client.request("POST", f"{path}/users", {"github_username": user})
        obj.emit(result, lambda r, u=user: console.print(f"{u} may now log in."))
    if jupyter is not None:
        result = client.request("PUT" if jupyter else "DELETE", f"{path}/jupyter")
        obj.emit(result, lambda r: console.print(f"Jupyter {'on' if jupyter else 'off'}."))
    if extend_hours is not None:
        _extend(obj, client, reservation_id, extend_hours)


@cli.command()
@click.argument("reservation_id", required=False)
@click.option(
    "--forward-agent",
    is_flag=True,
    help="Forward your SSH agent into the pod (off by default: root in the pod could use it).",
)
@click.pass_obj
def connect(obj: Context, reservation_id: str | None, forward_agent: bool) -> None:
    """SSH into an active reservation (the only one, if you have exactly one)."""
    client = obj.client()
    if reservation_id is None:
        active = client.request("GET", "/v1/reservations?status=active&limit=500")["reservations"]
        if len(active) != 1:
            raise CliError(
                "you have no active reservation"
                if not active
                else f"you have {len(active)} active reservations: name one "
                f"({', '.join(short(r['reservation_id']) for r in active)})"
            )
        reservation = active[0]
    else:
        reservation = client.request("GET", f"/v1/reservations/{reservation_id}")
    if reservation["status"] != "active":
        raise CliError(
            f"reservation {short(reservation['reservation_id'])} is {reservation['status']}, "
            "not active"
        )
    command = ssh.ssh_command(reservation, forward_agent)
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


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script, e.g. eval "$(gpu-dev completion bash)"."""
    from click.shell_completion import get_completion_class

    completion_class = get_completion_class(shell)
    assert completion_class is not None
    click.echo(completion_class(cli, {}, "gpu-dev", "_GPU_DEV_COMPLETE").source())


@cli.command()
@click.option("--watch", is_flag=True, help="refresh every --interval seconds until Ctrl+C")
@click.option("--interval", type=float, default=5.0, show_default=True)
@click.pass_obj
def avail(obj: Context, watch: bool, interval: float) -> None:
    """Live GPU availability per type, with queue lengths."""
    client = obj.client()
    while True:
        obj.emit(
            client.request("GET", "/v1/gpu/availability")["gpu_types"], render.availability_table
        )
        if not _wait_for_refresh(watch, interval):
            return


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


cli.add_command(disk)


def main() -> None:
    cli()
