"""The global options are defined once (`gpudev_cli.options`) and every command takes them
after its name too; the value nearest the end of the line wins. `config show` needs no API,
so it shows which --api-url won."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from gpudev_cli.main import cli
from gpudev_cli.options import GLOBAL_OPTIONS, SharedOption, share


def _every_command(group: click.Group, ctx: click.Context) -> list[click.Command]:
    commands = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        commands.append(command)
        if isinstance(command, click.Group):
            commands += _every_command(command, ctx)
    return commands


def test_every_command_and_subcommand_takes_each_global_option_once():
    ctx = click.Context(cli)
    commands = _every_command(cli, ctx)
    assert len(commands) > 12  # the disk and config subcommands too
    wanted = sorted(sorted(spec.declarations) for spec in GLOBAL_OPTIONS)
    for command in commands:
        shared = [p for p in command.params if isinstance(p, SharedOption)]
        assert sorted(sorted(p.opts) for p in shared) == wanted, command.name


@pytest.mark.parametrize(
    ("line", "api_url"),
    [
        (["--api-url", "http://before", "config", "show"], "http://before"),
        (["config", "show", "--api-url", "http://after"], "http://after"),
        (["config", "--api-url", "http://group", "show"], "http://group"),
        (["--api-url", "http://b", "config", "show", "--api-url", "http://a"], "http://a"),
        (["--api-url", "http://b", "config", "--api-url", "http://g", "show"], "http://g"),
    ],
)
def test_the_value_nearest_the_end_wins(monkeypatch, tmp_path, line, api_url):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, [*line, "-o", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert (shown["api_url"], shown["api_url_source"]) == (api_url, "--api-url")


def test_output_before_stays_when_none_is_given_after(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["-o", "json", "config", "show", "--api-url", "http://x"])
    assert json.loads(result.stdout)["api_url"] == "http://x"
    table = CliRunner().invoke(cli, ["config", "show", "--api-url", "http://x"])
    assert table.stdout.startswith("api_url: http://x")


@pytest.mark.parametrize("path", [["avail"], ["reserve"], ["disk", "list"], ["cancel"]])
def test_help_lists_them_once_under_global_options(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    own, global_ = result.output.split("Global options (before or after the command):")
    assert "--output" not in own
    for option in ("--api-url", "--profile", "--region", "-o, --output [table|json|csv]"):
        assert global_.count(option) == 1


def test_a_command_defining_a_global_option_itself_is_refused():
    @click.command()
    @click.option("--region")
    def clashing(region: str) -> None:
        pass

    with pytest.raises(TypeError, match=r"clashing defines global option\(s\) \['--region'\]"):
        share(clashing)


def test_shell_completion_offers_them_after_the_command():
    result = CliRunner().invoke(
        cli,
        env={
            "_GPU_DEV_COMPLETE": "bash_complete",
            "COMP_WORDS": "gpu-dev avail --o",
            "COMP_CWORD": "2",
        },
        prog_name="gpu-dev",
        complete_var="_GPU_DEV_COMPLETE",
    )
    assert "--output" in result.output
