"""`gpu-dev avail|status`: what the cluster has free, and its totals."""

from __future__ import annotations

import click

from gpudev_cli import render
from gpudev_cli.context import Context, wait_for_refresh


@click.command()
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
        if not wait_for_refresh(watch, interval):
            return


@click.command()
@click.pass_obj
def status(obj: Context) -> None:
    """Cluster totals: GPUs, reservations running and queued."""
    obj.emit(obj.client().request("GET", "/v1/cluster/status"), render.cluster_status_table)
