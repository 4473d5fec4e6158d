"""What every command shares: the global options' values, the API client, output in table or
JSON, one-line errors and --watch's refresh.

rich is imported by the first thing printed through `console` or `progress`, not at import:
`gpu-dev --help` and `--version` never load it (bench/cold_start.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import click

from gpudev_cli.client import CliError, SigV4Client, session_for
from gpudev_cli.config import ConfigError, load, resolve_api_url
from gpudev_cli.options import share

if TYPE_CHECKING:
    from rich.console import Console

LIVE = ("pending", "queued", "preparing", "active")
FINAL = ("cancelled", "expired", "failed")


class _FirstUseConsole:
    """A rich Console made when it is first used, with `options`."""

    def __init__(self, **options: Any):
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


console = cast("Console", _FirstUseConsole())
progress = cast("Console", _FirstUseConsole(stderr=True))  # spinners: never in a script's output


@dataclass
class Context:
    api_url_flag: str | None
    profile: str | None
    region: str | None
    output: str
    csv_allowed: bool = False  # set by the usage reports, the only commands that write CSV

    def client(self) -> SigV4Client:
        """Refuses `--output csv` before any request: a command that cannot print CSV must
        not act first (a reservation made, then its output refused)."""
        self._check_output()
        api_url, _ = resolve_api_url(self.api_url_flag)
        settings = load()
        profile = self.profile or settings.get("profile")
        return SigV4Client(api_url, session_for(profile, self.region or settings.get("region")))

    def _check_output(self) -> None:
        if self.output == "csv" and not self.csv_allowed:
            raise CliError(
                "--output csv is for `gpu-dev usage` and `gpu-dev admin usage`; "
                "use --output json here"
            )

    def emit(self, data: Any, render: Any) -> None:
        self._check_output()
        if self.output == "json":
            click.echo(json.dumps(data, indent=2, default=str))
        else:
            render(data)


class Group(click.Group):
    """Turns every expected failure into one line on stderr and exit code 1; every command
    it hands out takes the global options after its name too."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        return None if command is None else share(command)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (CliError, ConfigError) as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(1)


@contextmanager
def on_stderr() -> Iterator[None]:
    """What `console` prints inside goes to stderr instead: the tables and notes that go with
    a question. Questions are asked on stderr too (`err=True`), so stdout holds only the
    result: with --output json, one JSON document even when `reserve` asks."""
    with console.capture() as captured:
        yield
    progress.file.write(captured.get())


def short(identifier: str) -> str:
    return identifier[:8]


def interactive_option(asks: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--interactive/--no-interactive into the parameter `interactive_flag`, which
    `interactive()` resolves; `asks` says what the command asks when it is on."""
    return click.option(
        "--interactive/--no-interactive",
        "interactive_flag",
        default=None,
        help=f"{asks} (default: when run in a terminal)",
    )


def interactive(flag: bool | None) -> bool:
    """--interactive/--no-interactive, else whether a person is at the terminal."""
    return sys.stdin.isatty() if flag is None else flag


def wait_for_refresh(watch: bool, interval: float) -> bool:
    """For --watch: sleep, clear the screen and say to show it again; False when to stop."""
    if not watch:
        return False
    try:
        time.sleep(interval)
    except KeyboardInterrupt:
        return False
    console.clear()
    return True
