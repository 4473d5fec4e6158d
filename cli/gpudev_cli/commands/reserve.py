"""`gpu-dev reserve`: ask for what is missing, submit, and follow the reservation until ready."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import Any

import click

from gpudev_cli import prompts, render, ssh, timeline
from gpudev_cli.client import SigV4Client
from gpudev_cli.commands.disks import choose_disk
from gpudev_cli.commands.images import dockerfile_options, upload_context
from gpudev_cli.config import load
from gpudev_cli.context import (
    FINAL,
    Context,
    console,
    interactive,
    interactive_option,
    on_stderr,
    progress,
    short,
)

POLL_SECONDS = {"queued": 3.0}
# Counts that span whole 8-GPU nodes, confirmed with --distributed; any other count over 8
# goes to the API, which says what the type accepts.
MULTINODE_COUNTS = (16, 24, 32)


@click.command()
@click.option("--gpu-type", "-t", help="e.g. h100, t4, cpu-x86 (see `avail`)")
@click.option(
    "--gpus", "-g", type=int, help="GPU count (default 1; 0 for CPU types; 16/24/32 multinode)"
)
@click.option(
    "--hours", "-h", type=float, help="5 minutes (0.0833) to 24; fractions allowed (0.5: 30 min)"
)
@click.option("--name", help="a name to recognise it by")
@click.option("--disk", help="a named persistent disk, or 'none'")
@click.option("--jupyter", is_flag=True, help="start Jupyter Lab in the pod")
@click.option(
    "--idle-timeout",
    help="end it (disk saved) once its GPUs stay idle this long, after a warning: 2h, 90m, "
    "or none; default: the deployment's",
)
@click.option(
    "--profiling",
    is_flag=True,
    help="allow profilers in the pod: perf counters, Nsight Systems/Compute and `perf` need "
    "CAP_SYS_ADMIN, which the pod then gets (use it with sudo); off by default, as it "
    "weakens the pod's isolation",
)
@click.option(
    "--image",
    metavar="REF",
    help="the container image, e.g. ghcr.io/pytorch/pytorch-nightly:latest: the default image "
    "or one the operators allow (docs/images.md); the pod runs the digest it has now",
)
@click.option(
    "--preserve-entrypoint",
    is_flag=True,
    help="run the --image's own entrypoint and command instead of ours: no SSH, no dev user; "
    "ready once its container runs, its output in `gpu-dev logs` (not with --jupyter or "
    "multinode)",
)
@click.option(
    "--dockerfile",
    type=click.Path(path_type=Path),
    help="build the image from this Dockerfile (AWS CodeBuild; the same context again is "
    "reused at once); the context is its directory unless --context (not with --image)",
)
@dockerfile_options
@click.option(
    "--docker",
    is_flag=True,
    help="a Docker daemon beside the dev server, DOCKER_HOST set in SSH sessions; if the "
    "operators allow it (docs/images.md; one whole GPU node, not with --profiling)",
)
@click.option("--distributed", is_flag=True, help="confirm a multinode (more than 8 GPUs) request")
@click.option("--github-user", help="GitHub user whose SSH keys may log in")
@click.option("--no-wait", is_flag=True, help="return as soon as the request is accepted")
@interactive_option("ask for missing values")
@click.pass_obj
def reserve(
    obj: Context,
    gpu_type: str | None,
    gpus: int | None,
    hours: float | None,
    name: str | None,
    disk: str | None,
    jupyter: bool,
    idle_timeout: str | None,
    profiling: bool,
    image: str | None,
    preserve_entrypoint: bool,
    dockerfile: Path | None,
    context_dir: Path | None,
    docker: bool,
    distributed: bool,
    github_user: str | None,
    no_wait: bool,
    interactive_flag: bool | None,
) -> None:
    """Reserve GPUs and (unless --no-wait) follow the reservation until it is ready."""
    if dockerfile is not None and image is not None:
        raise click.UsageError("--dockerfile and --image do not go together: choose one")
    if context_dir is not None and dockerfile is None:
        raise click.UsageError("--context goes with --dockerfile")
    client = obj.client()
    ask = interactive(interactive_flag)
    gpu_type, gpus, hours = _request_body(client, ask, gpu_type, gpus, hours, distributed)
    disk = choose_disk(client, disk, ask)
    image_build = upload_context(client, dockerfile, context_dir)[0] if dockerfile else None
    body = {
        "gpu_type": gpu_type,
        "gpu_count": gpus,
        "hours": hours,
        "name": name,
        "disk_name": disk,
        "jupyter": jupyter,
        "idle_timeout": idle_timeout.strip().lower() if idle_timeout else None,
        "profiling": profiling,
        "image": image,
        "preserve_entrypoint": preserve_entrypoint,
        "image_build": image_build,
        "docker": docker,
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
    ssh.sync_configs([final])
    tail = timeline.failure_log(client, final) if obj.output != "json" else None
    obj.emit(final, lambda r: render.reservation_panel(r, tail))
    if final["status"] != "active":
        sys.exit(1)


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
        with on_stderr():
            render.availability_table(types)
        chosen = prompts.pick_type(types)
        gpu_type = chosen["gpu_type"]
        if gpus is None:
            gpus = prompts.pick_count(chosen)
    if gpus is None:
        gpus = 0 if gpu_type.lower().startswith("cpu") else 1
    if hours is None:
        hours = prompts.pick_hours() if ask else 8.0
    if gpus in MULTINODE_COUNTS and not distributed:
        if not ask:
            raise click.UsageError(
                f"{gpus} GPUs span {gpus // 8} nodes: add --distributed to confirm multinode"
            )
        click.confirm(
            f"{gpus} GPUs run as {gpus // 8} pods on whole nodes, rendezvous on port 29500. "
            "Continue?",
            abort=True,
            err=True,
        )
    return gpu_type, gpus, hours


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
                    detail = f"queued {render.queue_place(reservation)}"
                status.update(f"[{elapsed // 60}m{elapsed % 60:02d}s] {detail}")
                time.sleep(POLL_SECONDS.get(reservation["status"], 1.0))
                reservation = client.request("GET", f"/v1/reservations/{rid}")
    except KeyboardInterrupt:
        if ask and click.confirm(f"\nCancel reservation {short(rid)}?", default=False, err=True):
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
