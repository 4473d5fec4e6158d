"""The caller's notification settings: read (`notification_settings`) and changed
(`change_notification_settings`), behind `GET/PUT /v1/me/notifications`.

A change is checked whole before anything is written: a bad address or URL, a null where a
value is needed, is an InvalidRequest (422) and the saved settings stay as they were. A new
webhook URL is sealed with KMS and only the ciphertext and a masked hint are saved; a new
address gets its SES identity (SES mails it a link) and stays `pending` until SES says it is
verified, which a later read notices and records."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.errors import Unavailable
from gpudev.identity import Caller
from gpudev.notifications.channels import ChannelFailed, SesEmail
from gpudev.notifications.rules import checked_email, checked_webhook, masked_webhook
from gpudev.notifications.schemas import (
    DEFAULT_WARNING_MINUTES,
    EVENT_KINDS,
    NotificationSettings,
    NotificationSettingsUpdate,
)
from gpudev.notifications.vault import WebhookVault
from gpudev.repositories.notifications import ContactRow, NotificationsRepository


@dataclass(frozen=True)
class ContactServices:
    """What a change needs beyond the database: the key that seals webhook URLs, SES for
    the address's identity, and where webhooks may point."""

    vault: WebhookVault
    email: SesEmail
    webhook_prefixes: tuple[str, ...]


def notification_settings(
    conn: psycopg.Connection[Any], caller: Caller, email: SesEmail
) -> NotificationSettings:
    user = bound_user(conn, caller)
    rows = NotificationsRepository(conn)
    row = rows.contact(user.username)
    if row is None:
        return NotificationSettings()
    if row.email is not None and row.email_status == "pending" and _verified(email, row.email):
        rows.mark_verified(row.user_id, row.email)
        row = replace(row, email_status="verified")
    return _shown(row)


def change_notification_settings(
    conn: psycopg.Connection[Any],
    caller: Caller,
    update: NotificationSettingsUpdate,
    services: ContactServices,
) -> NotificationSettings:
    sent = update.model_fields_set
    email = checked_email(update.email) if update.email is not None else None
    webhook = (
        checked_webhook(update.slack_webhook, services.webhook_prefixes)
        if update.slack_webhook is not None
        else None
    )
    user = bound_user(conn, caller)
    rows = NotificationsRepository(conn)
    row = rows.contact(user.username) or _defaults(user.username)
    if "email" in sent and email != row.email:
        status = None
        if email is not None:
            status = "verified" if _start_verification(services.email, email) else "pending"
        row = replace(row, email=email, email_status=status)
    if "slack_webhook" in sent:
        sealed = _sealed(services.vault, user.username, webhook) if webhook else None
        row = replace(
            row,
            webhook_ciphertext=sealed,
            webhook_hint=masked_webhook(webhook) if webhook else None,
        )
    if "enabled" in sent:
        row = replace(row, enabled=update.enabled)
    if "events" in sent:
        row = replace(row, events=[kind for kind in EVENT_KINDS if kind in update.events])
    if "warning_minutes" in sent:
        row = replace(row, warning_minutes=sorted(set(update.warning_minutes), reverse=True))
    return _shown(rows.save_contact(row))


def _defaults(user_id: str) -> ContactRow:
    return ContactRow(
        user_id, True, None, None, None, None, list(EVENT_KINDS), list(DEFAULT_WARNING_MINUTES)
    )


def _shown(row: ContactRow) -> NotificationSettings:
    return NotificationSettings(
        enabled=row.enabled,
        email=row.email,
        email_status=row.email_status,  # type: ignore[arg-type]
        slack_webhook=row.webhook_hint,
        events=row.events,  # type: ignore[arg-type]
        warning_minutes=row.warning_minutes,
    )


def _verified(email: SesEmail, address: str) -> bool:
    try:
        return email.is_verified(address)
    except ChannelFailed:
        return False  # asked again at the next read; the answer shows it still pending


def _start_verification(email: SesEmail, address: str) -> bool:
    try:
        return email.start_verification(address)
    except ChannelFailed as error:
        raise Unavailable(f"{error}; nothing was saved, try again") from None


def _sealed(vault: WebhookVault, user_id: str, url: str) -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return vault.seal(user_id, url)
    except (ClientError, BotoCoreError):
        raise Unavailable("the webhook URL could not be encrypted; nothing was saved") from None
