"""`gpu-dev config show|set|ssh-include|notify`: the CLI's own settings
(`~/.config/gpu-dev/config.json`), the opt-in `Include` in ~/.ssh/config, and the
notification contacts the API keeps for you (`notify`)."""

from __future__ import annotations

from typing import Any

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


NOTIFY_EVENTS = ("queued", "active", "warning", "ended", "health")


@config.command("notify")
@click.option("--email", metavar="ADDR", help="send e-mails here (SES mails a link to verify it)")
@click.option("--no-email", is_flag=True, help="stop sending e-mails; forget the address")
@click.option("--slack-webhook", metavar="URL", help="post to this Slack incoming webhook")
@click.option("--no-slack-webhook", is_flag=True, help="stop posting to Slack; forget the URL")
@click.option("--off", is_flag=True, help="send nothing (contacts are kept)")
@click.option("--on", is_flag=True, help="send again after --off")
@click.option(
    "--events",
    metavar="KINDS",
    help=f"comma-separated, which to send: {','.join(NOTIFY_EVENTS)} (default: all)",
)
@click.option(
    "--warnings",
    metavar="MINUTES",
    help="comma-separated, which expiry warnings: 60,30,15,10,5,1 (default: 30,15,5)",
)
@click.option("--show", is_flag=True, help="only show the settings (the webhook masked)")
@click.pass_obj
def config_notify(
    obj: Context,
    email: str | None,
    no_email: bool,
    slack_webhook: str | None,
    no_slack_webhook: bool,
    off: bool,
    on: bool,
    events: str | None,
    warnings: str | None,
    show: bool,
) -> None:
    """Be told by e-mail or Slack when a reservation is queued, starts, is about to expire,
    ends or is in trouble (docs/notifications.md). Kept server-side, for every machine you
    use; the webhook URL is stored encrypted and never shown whole."""
    body: dict[str, object] = {}
    if email is not None or no_email:
        body["email"] = None if no_email else email
    if slack_webhook is not None or no_slack_webhook:
        body["slack_webhook"] = None if no_slack_webhook else slack_webhook
    if off or on:
        body["enabled"] = on
    if events is not None:
        body["events"] = [kind.strip() for kind in events.split(",") if kind.strip()]
    if warnings is not None:
        try:
            body["warning_minutes"] = [int(m) for m in warnings.split(",") if m.strip()]
        except ValueError:
            raise click.UsageError("--warnings takes whole minutes, e.g. 30,15,5") from None
    clashes = [
        pair
        for pair, given in (
            ("--email/--no-email", email is not None and no_email),
            ("--slack-webhook/--no-slack-webhook", slack_webhook is not None and no_slack_webhook),
            ("--on/--off", on and off),
        )
        if given
    ]
    if clashes:
        raise click.UsageError(f"choose one of {clashes[0]}")
    if show and body:
        raise click.UsageError("--show changes nothing: give it alone")
    if not show and not body:
        raise click.UsageError("say what to change (see --help), or --show")
    client = obj.client()
    settings = (
        client.request("GET", "/v1/me/notifications")
        if show
        else client.request("PUT", "/v1/me/notifications", body)
    )
    obj.emit(settings, lambda s: console.print(_notify_lines(s)))


def _notify_lines(settings: dict[str, Any]) -> str:
    email = settings.get("email")
    status = settings.get("email_status")
    lines = [
        f"notifications: {'on' if settings.get('enabled') else 'off'}",
        f"e-mail: {email or '(none)'}"
        + (" (not verified yet: open the link SES mailed you)" if status == "pending" else ""),
        f"slack webhook: {settings.get('slack_webhook') or '(none)'}",
        f"events: {', '.join(map(str, settings.get('events') or [])) or '(none)'}",
        "expiry warnings: "
        + (", ".join(f"{m} min" for m in settings.get("warning_minutes") or []) or "(none)"),
    ]
    return "\n".join(lines)
