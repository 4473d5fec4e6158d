"""`gpu-dev config show|set|ssh-include`: the CLI's own settings
(`~/.config/gpu-dev/config.json`) and the opt-in `Include` in ~/.ssh/config."""

from __future__ import annotations

import click

from gpudev_cli import ssh_include
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


@config.command("ssh-include")
@click.option("--remove", is_flag=True, help="take the Include out again")
@click.pass_obj
def config_ssh_include(obj: Context, remove: bool) -> None:
    """Let plain `ssh gpu-dev-<id>` and VS Code Remote-SSH reach your live reservations:
    adds (or with --remove, takes out) one marked `Include` block at the top of
    ~/.ssh/config. Running it again changes nothing; the rest of the file is left as is."""
    changed = ssh_include.remove() if remove else ssh_include.install()
    path = ssh_include.user_config()
    data = {"ssh_config": str(path), "included": not remove, "changed": changed}
    if remove:
        message = f"Removed the gpu-dev Include from {path}." if changed else f"{path} has none."
    else:
        message = (
            f"Added the gpu-dev Include to {path}: `ssh gpu-dev-<id>` now works."
            if changed
            else f"{path} already includes the gpu-dev configs."
        )
    obj.emit(data, lambda d: console.print(message))
