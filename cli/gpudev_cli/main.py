"""`gpu-dev`: reserve GPU dev servers. Every request is signed with your AWS credentials.

The group (its global options, accepted before or after the command, are defined in
`gpudev_cli.options`); the commands live in `gpudev_cli.commands`, one module per area, and
are registered here."""

from __future__ import annotations

import click

from gpudev_cli.commands import (
    availability,
    completion,
    config,
    disks,
    images,
    logs,
    reservations,
    reserve,
    usage,
)
from gpudev_cli.context import Context, Group
from gpudev_cli.options import root_options


@click.group(cls=Group, context_settings={"help_option_names": ["--help"]})
# The version is read from the package's metadata when --version asks, not at every start.
@click.version_option(package_name="gpu-dev", prog_name="gpu-dev")
@click.pass_context
def cli(
    ctx: click.Context, api_url: str | None, profile: str | None, region: str | None, output: str
) -> None:
    ctx.obj = Context(api_url, profile, region, output)


root_options(cli)  # --api-url, --profile, --region, --output: see gpudev_cli.options


COMMANDS: tuple[click.Command, ...] = (
    reserve.reserve,
    reservations.list_,
    reservations.show,
    reservations.events,
    logs.logs,
    reservations.cancel,
    reservations.extend,
    reservations.edit,
    reservations.connect,
    availability.avail,
    availability.status,
    config.config,
    disks.disk,
    images.image,
    completion.completion,
    usage.usage,
    usage.admin,
)
for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    cli()
