"""`gpu-dev config show|set`: the CLI's own settings (`~/.config/gpu-dev/config.json`)."""

from __future__ import annotations

import click

from gpudev_cli.config import ConfigError, config_path, load, resolve_api_url, save
from gpudev_cli.context import Context, console


@click.group()
def config() -> None:
    """Show or change the CLI's settings."""


@config.command("show")
@click.pass_obj
def config_show(obj: Context) -> None:
    """The settings, and which API URL is used and where it comes from."""
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
@click.pass_obj
def config_set(obj: Context, key: str, value: str) -> None:
    """Save one setting: api_url, region, profile or github_user."""
    path = save(key, value)
    obj.emit(
        {"key": key, "value": load()[key], "config_file": str(path)},
        lambda d: console.print(f"{d['key']} saved to {d['config_file']}"),
    )
