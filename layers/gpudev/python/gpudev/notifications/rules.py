"""The contacts' rules, pure: what an e-mail address and a webhook URL must look like, and
how a webhook URL is shown (masked). Every refusal is an InvalidRequest naming the field."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from gpudev.errors import InvalidRequest
from gpudev.notifications.schemas import EMAIL_PATTERN

EMAIL = re.compile(EMAIL_PATTERN)
SHOWN_TAIL = 4
MAX_WEBHOOK_LENGTH = 500


def checked_email(address: str) -> str:
    address = address.strip()
    if not EMAIL.match(address):
        raise InvalidRequest(
            "that is not an e-mail address",
            field="email",
            allowed="an address like you@example.com",
        )
    return address


def checked_webhook(url: str, allowed_prefixes: tuple[str, ...]) -> str:
    """A Slack incoming-webhook URL: one of the allowed prefixes (so the notifier posts only
    to Slack, never to an address inside our network), with nothing but its path after."""
    url = url.strip()
    parts = urlsplit(url)
    if (
        not any(url.startswith(prefix) for prefix in allowed_prefixes)
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
        or len(url) == max((len(p) for p in allowed_prefixes if url.startswith(p)), default=0)
        or any(c.isspace() for c in url)
        or len(url) > MAX_WEBHOOK_LENGTH
    ):
        raise InvalidRequest(
            "that is not a Slack incoming-webhook URL",
            field="slack_webhook",
            allowed=" or ".join(f"{prefix}…" for prefix in allowed_prefixes),
            hint="Slack: Apps → Incoming Webhooks → Add New Webhook to Workspace",
        )
    return url


def masked_webhook(url: str) -> str:
    """The URL as shown: its scheme and host, and the last few characters of its secret."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…{url[-SHOWN_TAIL:]}"
