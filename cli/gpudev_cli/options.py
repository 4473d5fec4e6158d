"""The global options (--api-url, --profile, --region, --output), defined once here and
accepted before the command or after it, as the AWS CLI does: `gpu-dev -o json avail`,
`gpu-dev avail -o json` and `gpu-dev disk list -o json` are the same. The `gpu-dev` group
takes them (with their defaults) into `gpudev_cli.context.Context`; every command and
subcommand takes them too, without defaults, and a value given there replaces the one
given before it: the value nearest the end of the command line wins."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import click


@dataclass(frozen=True)
class GlobalOption:
    declarations: tuple[str, ...]
    attribute: str  # the field of gpudev_cli.context.Context it sets
    help: str
    choices: tuple[str, ...] | None = None
    default: str | None = None

    def option(self, **settings: Any) -> click.Option:
        return click.Option(
            list(self.declarations),
            help=self.help,
            type=click.Choice(self.choices) if self.choices else None,
            **settings,
        )


GLOBAL_OPTIONS = (
    GlobalOption(
        ("--api-url",),
        "api_url_flag",
        "gpu-dev API URL (else $GPU_DEV_API_URL, else the config file)",
    ),
    GlobalOption(("--profile",), "profile", "AWS profile (default: the standard credential chain)"),
    GlobalOption(("--region",), "region", "AWS region for signing"),
    GlobalOption(
        ("--output", "-o"),
        "output",
        "table for people, json for scripts (stdout then holds one JSON document); csv: "
        "the usage reports only",
        ("table", "json", "csv"),
        "table",
    ),
)


class SharedOption(click.Option):
    """A global option given after the command: it overrides the group's value and is
    listed under "Global options" rather than among the command's own."""

    def __init__(self, spec: GlobalOption) -> None:
        super().__init__(
            list(spec.declarations),
            type=click.Choice(spec.choices) if spec.choices else None,
            expose_value=False,
            callback=self._override,
        )
        self.attribute = spec.attribute

    def _override(self, ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        settings = ctx.find_root().obj
        if value is not None and settings is not None:  # None: completion parses only
            setattr(settings, self.attribute, value)
        return value

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        return None


def root_options(command: click.Command) -> click.Command:
    """The options on the `gpu-dev` group, with their defaults (before the command)."""
    command.params.extend(
        spec.option(default=spec.default, show_default=spec.default is not None)
        for spec in GLOBAL_OPTIONS
    )
    return command


@cache
def _global_help() -> str:
    context = click.Context(click.Command("gpu-dev"))
    formatter = click.HelpFormatter()
    records = [
        spec.option(default=spec.default).get_help_record(context) for spec in GLOBAL_OPTIONS
    ]
    formatter.write_dl([record for record in records if record is not None])
    # \b keeps click from re-wrapping the list
    return "\b\nGlobal options (before or after the command):\n" + formatter.getvalue()


def share(command: click.Command) -> click.Command:
    """Give `command` (and, for a group, its subcommands) the global options; idempotent."""
    if any(isinstance(param, SharedOption) for param in command.params):
        return command
    taken = {name for param in command.params for name in param.opts + param.secondary_opts}
    clashes = taken & {name for spec in GLOBAL_OPTIONS for name in spec.declarations}
    if clashes:
        raise TypeError(f"{command.name} defines global option(s) {sorted(clashes)} itself")
    command.params.extend(SharedOption(spec) for spec in GLOBAL_OPTIONS)
    command.epilog = "\n\n".join(filter(None, (command.epilog, _global_help())))
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            share(subcommand)
    return command
