"""The notification services' collaborators for this execution environment, from settings."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.aws import aws_clients
from gpudev.notifications.channels import SesEmail, SlackWebhook
from gpudev.notifications.delivery import Notifier
from gpudev.notifications.service import ContactServices
from gpudev.notifications.vault import WebhookVault
from gpudev.settings import notification_settings


def contact_services() -> ContactServices:
    settings = notification_settings()
    return ContactServices(
        vault=WebhookVault(aws_clients().kms, settings.key_id),
        email=ses_email(),
        webhook_prefixes=settings.allowed_webhook_prefixes,
    )


def ses_email() -> SesEmail:
    return SesEmail(aws_clients().sesv2, notification_settings().sender)


def notifier(conn: psycopg.Connection[Any]) -> Notifier:
    settings = notification_settings()
    return Notifier(
        conn=conn,
        vault=WebhookVault(aws_clients().kms, settings.key_id),
        email=ses_email(),
        slack=SlackWebhook(
            timeout_seconds=settings.webhook_timeout_seconds,
            attempts=settings.webhook_attempts,
            first_wait_seconds=settings.webhook_first_wait_seconds,
        ),
        rate_per_hour=settings.rate_per_hour,
    )
