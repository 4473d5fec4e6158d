"""How the CLI shows reservations, availability and cluster totals as tables and panels
(`--output table`). rich's modules are imported by the function that draws with them: the
commands import this module, and `gpu-dev --help` should not load rich.

One clock on screen: durations, waits and "expires in" are the lifecycle's clock (what the
API computes: hours reserved, the allocator's ETAs, `expires_in_minutes`), which a local cloud
may compress (`make run ARGS=--seconds-per-hour=60`: an hour lasts a minute); moments are
wall-clock timestamps (UTC), never "N minutes ago" in another unit."""

from __future__ import annotations

from typing import Any

from gpudev_cli import ssh, ssh_include
from gpudev_cli.context import LIVE, console, short


def gpus(r: dict[str, Any]) -> str:
    return r["gpu_type"] if r["gpu_count"] == 0 else f"{r['gpu_count']}x {r['gpu_type']}"


def minutes(count: int | None) -> str:
    """A clock duration or wait: "now", "unknown", "12 min", "9 h 39 min"."""
    if count is None:
        return "unknown"
    if count == 0:
        return "now"
    return f"{count} min" if count < 60 else f"{count // 60} h {count % 60:02d} min"


def queue_place(r: dict[str, Any]) -> str:
    """A queued reservation's place and the allocator's ETA: "#1, about 579 min"."""
    if not r.get("queue_position"):
        return ""
    return f"#{r['queue_position']}, about {minutes(r.get('estimated_wait_minutes'))}"


def moment(value: str | None) -> str:
    return (value or "")[:16].replace("T", " ")


def reservations_table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    # No outer border: four columns more for the content in an 80-column terminal.
    table = Table(title="GPU Reservations", show_edge=False, pad_edge=False)
    columns = ("ID", "Name", "GPUs", "Status", "Queue", "Hours", "Created", "Expires", "GPU use")
    for column in columns:
        # An id stays whole (8 characters: what every command takes) however narrow the
        # terminal, and so do a status word (at most 9), a shape ("16x h100") and a queue
        # place; the others wrap.
        table.add_column(
            column,
            no_wrap=column in ("ID", "Queue"),
            min_width={"ID": 8, "Status": 9, "GPUs": 8}.get(column),
        )
    colours = {"active": "green", "failed": "red", "queued": "yellow", "pending": "yellow"}
    for r in rows:
        status = r["status"] + (
            " (cancel requested)" if r.get("cancel_requested_at") and r["status"] in LIVE else ""
        )
        if r.get("health_warning") and r["status"] in LIVE:
            status += " [red]⚠ unhealthy[/]"
        table.add_row(
            short(r["reservation_id"]),
            r.get("name") or "",
            gpus(r),
            f"[{colours.get(r['status'], 'dim')}]{status}[/]",
            queue_place(r) if r["status"] in LIVE else "",
            f"{r['duration_hours']:g}",
            moment(r["created_at"]),
            moment(r.get("expires_at")),
            gpu_use_cell(r),  # the last 15 clock minutes (utilisation.py)
        )
    console.print(table if rows else "No reservations.")


def reservation_panel(r: dict[str, Any], failure_log: str | None = None) -> None:
    """One reservation; `failure_log`: the log tail its failed start recorded (timeline.py)."""
    rid = short(r["reservation_id"])
    lines = [
        f"[bold]{rid}[/] {r.get('name') or ''}  {r['status']}",
        f"GPUs: {gpus(r)}   hours: {r['duration_hours']:g}   id: {r['reservation_id']}",
    ]
    if r.get("queue_position"):
        lines.append(f"Queue: {queue_place(r)}")
    if r["status"] in LIVE and r["status"] != "active" and r.get("current_detailed_status"):
        from rich.markup import escape

        # The start-up step ("pulling image …", "waiting for sshd"), or why it waits.
        lines.append(f"Now: {escape(r['current_detailed_status'])}")
    if r["status"] == "active":
        lines += _entrypoint_lines(r) if r.get("preserve_entrypoint") else _connect_lines(r)
        left = r.get("expires_in_minutes")
        lines.append(
            f"Started {moment(r.get('launched_at'))} UTC, expires {moment(r.get('expires_at'))} "
            f"UTC (in {minutes(left) if left else 'less than a minute'})"
        )
    if r.get("jupyter_url") and r.get("jupyter_available") is not False and r["status"] in LIVE:
        lines.append(f"Jupyter: {jupyter_command(r)}   (through SSH; it prints the URL)")
    elif r["status"] in LIVE and r.get("jupyter_available") is False:
        lines.append(f"[yellow]Jupyter: unavailable: {r.get('jupyter_error')}[/]")
    elif r["status"] in LIVE:
        lines.append(
            "Jupyter: on, starting"
            if r["jupyter_enabled"]
            else f"Jupyter: off (gpu-dev edit {rid} --enable-jupyter)"
        )
    users = ", ".join(r.get("secondary_users") or []) or f"none (gpu-dev edit {rid} --add-user GH)"
    disk = r.get("disk_name") or "none"
    if r.get("disk_name") and r.get("ebs_volume_id"):
        disk += f" (volume {r['ebs_volume_id']})"
    lines.append(f"Disk: {disk}   Other users: {users}")
    for login in r.get("keyless_users") or []:  # the lifecycle's last fetch found none
        lines.append(
            f"[yellow]{login}: no public keys on GitHub yet (https://github.com/{login}.keys): "
            "they can log in once they add one[/]"
        )
    if r.get("image"):  # asked with --image: the reference and the digest the pod runs
        lines.append(f"Image: {r['image']}\n       {r.get('image_digest')}")
        if r.get("preserve_entrypoint"):
            lines.append("       its own entrypoint and command (--preserve-entrypoint)")
    if r.get("image_build"):  # --dockerfile: the context the image is (being) built from
        context = f"context {r['image_build'][:12]} (--dockerfile)"
        lines.append(f"       built from {context}" if r.get("image") else f"Image: {context}")
    if r.get("docker"):  # reserve --docker: the sidecar's socket (cluster/pod_docker.py)
        lines.append("Docker:  on (DOCKER_HOST in SSH sessions; `docker` works as dev)")
    if r.get("profiling"):
        lines.append("Profiling: on (CAP_SYS_ADMIN; run profilers with sudo)")
    if r.get("oom_count"):
        lines.append(f"OOM kills: {r['oom_count']}, last at {moment(r.get('last_oom_at'))} UTC")
    if r.get("health_warning") and r["status"] in LIVE:
        lines.append(f"[red]Health: {r['health_warning']}[/]")
    if r["status"] in LIVE and r.get("gpu_count"):
        lines.append(f"Idle timeout: {idle_timeout_words(r)}")
    if r.get("idle_warning") and r["status"] in LIVE:
        lines.append(f"[yellow]Idle: {r['idle_warning']}[/]")
    if r.get("extension_error"):
        lines.append(f"[red]Extension refused: {r['extension_error']}[/]")
    if r.get("failure_reason"):  # why it ended, whatever the ending
        from rich.markup import escape

        color = "red" if r["status"] == "failed" else "yellow"
        lines.append(f"[{color}]Ended ({r['status']}): {escape(r['failure_reason'])}[/]")
    if failure_log:  # its first line says whose log (or why there is none)
        from rich.markup import escape

        lines.append(escape(failure_log))
    if r.get("cancel_requested_at") and r["status"] in LIVE:
        lines.append("Cancel requested.")
    # soft_wrap: the terminal wraps long lines, so a copied ssh command stays one line.
    console.print("\n".join(lines), soft_wrap=True)


def jupyter_command(r: dict[str, Any]) -> str:
    """Jupyter listens on a socket only `dev` can open: the owner reaches it through SSH."""
    return f"gpu-dev connect {short(r['reservation_id'])} --jupyter"


def _entrypoint_lines(r: dict[str, Any]) -> list[str]:
    """A pod running its image's own entrypoint (--preserve-entrypoint): no SSH to offer.
    The ports its image exposes are not known (the API reads the manifest, not the image's
    config), so its output is what there is to see."""
    rid = short(r["reservation_id"])
    return [
        "SSH:     none: the image's own entrypoint runs (--preserve-entrypoint)",
        f"Output:  gpu-dev logs {rid}   (only the logs show it: no port is published)",
    ]


def _connect_lines(r: dict[str, Any]) -> list[str]:
    """How to connect (the caller has written the reservation's SSH config)."""
    from rich.markup import escape

    included = ssh_include.installed()
    reachable = ssh.ready_nodes(r)
    rid = short(r["reservation_id"])
    multinode = r.get("total_nodes", 1) > 1
    lines = [f"Nodes:   {len(reachable)}/{r['total_nodes']} nodes ready"] if multinode else []
    lines.append(f"Connect: gpu-dev connect {rid}" + (" [--node N]" if multinode else ""))
    for node in reachable:  # one line per node: each has its own SSH endpoint
        rank = node["rank"]
        alias = ssh.host_alias(r, rank)
        label = f"Node {rank}: " if multinode else "SSH:    "
        lines.append(
            f"{label} {escape(ssh.printed_command(r, rank=rank))}"
            + (f"   (or: ssh {alias})" if included else "")
        )
    lines += [
        f"VS Code: {ssh.vscode_link(r)}"
        + ("" if included else "   (after `gpu-dev config ssh-include`)"),
    ]
    if hint := ssh.address_hint(r):
        lines.append(f"[yellow]Address {escape(str(r.get('node_ip')))}: {hint}[/]")
    return lines


def availability_table(types: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(
        title="GPU availability (numbers are GPUs; CPU types: user slots)",
        caption="Est. wait: for a new 1-GPU request, in clock minutes",
    )
    for column in ("Type", "Available", "Max reservable", "Total", "Queue", "Est. wait", "Updated"):
        table.add_column(column)
    for t in types:
        per_node = t["max_per_node"] or 3
        colour = (
            "red"
            if t["available_gpus"] == 0
            else ("green" if t["available_gpus"] >= per_node else "yellow")
        )
        table.add_row(
            t["gpu_type"],
            f"[{colour}]{t['available_gpus']}[/]",
            str(t["max_reservable"]),
            str(t["total_cluster_gpus"]),
            str(t["queue_length"]),
            minutes(t.get("estimated_wait_minutes")),
            (t.get("last_availability_update") or "never")[:19].replace("T", " "),
        )
    console.print(table)
    console.print("Reserve with: gpu-dev reserve --gpu-type <type> --gpus <n>")


def cluster_status_table(s: dict[str, Any]) -> None:
    from rich.table import Table

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
    waits = Table(title="By GPU type (Est. wait: for a new 1-GPU request, in clock minutes)")
    for column in ("Type", "Available", "Queue", "Est. wait"):
        waits.add_column(column)
    for t in s["by_gpu_type"]:
        waits.add_row(
            t["gpu_type"],
            str(t["available_gpus"]),
            str(t["queue_length"]),
            minutes(t.get("estimated_wait_minutes")),
        )
    console.print(waits)


def gpu_use_cell(r: dict[str, Any]) -> str:
    if r["status"] != "active" or r.get("gpu_count", 0) == 0:
        return ""
    percent = r.get("gpu_use_percent")
    if percent is None:
        return "[dim]–[/]"
    return f"[yellow]{percent:.0f}%[/]" if percent < 5 else f"{percent:.0f}%"


def idle_timeout_words(r: dict[str, Any]) -> str:
    minutes = r.get("idle_timeout_minutes")
    if minutes is None:
        return "never (none)"
    hours, rest = divmod(int(minutes), 60)
    return ((f"{hours} h" if hours else "") + (f" {rest} min" if rest else "")).strip()
