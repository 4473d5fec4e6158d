"""`gpu-dev`: reserve GPU dev servers. Every request is signed with your AWS credentials.

The group and its global options; the commands live in `gpudev_cli.commands`, one module per
area, and are registered here."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from typing import TypeVar

import click

from gpudev_cli.commands import (
    availability,
    completion,
    config,
    disks,
    reservations,
    reserve,
    usage,
)
from gpudev_cli.context import Context, Group

F = TypeVar("F", bound=Callable[..., object])

GLOBAL_OPTIONS = (
    click.option("--api-url", help="gpu-dev API URL (else $GPU_DEV_API_URL, else the config file)"),
    click.option("--profile", help="AWS profile (default: the standard credential chain)"),
    click.option("--region", help="AWS region for signing"),
    click.option(
        "--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True
    ),
)


def global_options(function: F) -> F:
    """--api-url, --profile, --region and --output, in that order: defined once, here."""
    for option in reversed(GLOBAL_OPTIONS):
        function = option(function)
    return function


@click.group(cls=Group, context_settings={"help_option_names": ["--help"]})
@click.version_option(version("gpu-dev"), prog_name="gpu-dev")
@global_options
@click.pass_context
def cli(
    ctx: click.Context, api_url: str | None, profile: str | None, region: str | None, output: str
) -> None:
    ctx.obj = Context(api_url, profile, region, output)


COMMANDS: tuple[click.Command, ...] = (
    reserve.reserve,
    reservations.list_,
    reservations.show,
    reservations.cancel,
    reservations.extend,
    reservations.edit,
    reservations.connect,
    availability.avail,
    availability.status,
    config.config,
    disks.disk,
    completion.completion,
    usage.usage,
    usage.admin,
)
for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    cli()
