"""`--help` says what is true: every command explains itself, the `disk` group names the
subcommands it has, and `config set` answers in JSON like every command that prints a
result (docs/user-guide.md: all but `connect` and `completion`)."""

from __future__ import annotations

import json
import re

import click
from click.testing import CliRunner

from gpudev_cli.main import cli


def _every_command(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append((name, command))
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", c) for sub, c in _every_command(command, ctx)]
    return found


def test_every_command_has_a_help_text():
    missing = [name for name, c in _every_command(cli, click.Context(cli)) if not c.help]
    assert missing == []


def test_the_disk_help_names_exactly_its_subcommands():
    disk = cli.get_command(click.Context(cli), "disk")
    assert isinstance(disk, click.Group) and disk.help
    named = re.search(r":\s*(.+)\.$", disk.help)
    assert named is not None
    assert sorted(named.group(1).split(", ")) == sorted(disk.commands)


def test_config_set_answers_in_json(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = CliRunner().invoke(
        cli, ["config", "set", "api_url", "https://x.example/", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "key": "api_url",
        "value": "https://x.example",
        "config_file": str(tmp_path / "gpu-dev" / "config.json"),
    }
