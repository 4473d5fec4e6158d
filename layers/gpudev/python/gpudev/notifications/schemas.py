"""The notification settings as the API takes and answers them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EventKind = Literal["queued", "active", "warning", "ended", "health"]
EVENT_KINDS: tuple[EventKind, ...] = ("queued", "active", "warning", "ended", "health")
WARNING_CHOICES = (60, 30, 15, 10, 5, 1)  # the CHECK in migrations/0039
DEFAULT_WARNING_MINUTES = (30, 15, 5)
EmailStatus = Literal["pending", "verified"]


# The address SES accepts as an identity (the table's CHECK, migrations/0039).
EMAIL_PATTERN = r"^[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$"


class NotificationSettingsUpdate(BaseModel):
    """What a PUT changes: only the keys sent (`model_fields_set`); null removes a contact.
    The other keys take no null: their defaults below only stand for "not sent"."""

    model_config = ConfigDict(extra="forbid")

    email: str | None = Field(
        default=None,
        max_length=254,
        pattern=EMAIL_PATTERN,
        description="where e-mails go (verified through a link SES mails first); null: none",
    )
    # No max_length here: a refusal of the model quotes the input, and this one is a secret
    # (rules.checked_webhook checks its length and never quotes it).
    slack_webhook: str | None = Field(
        default=None,
        description="a Slack incoming-webhook URL (kept encrypted, never shown whole); null: none",
    )
    enabled: bool = Field(default=True, strict=True, description="false: nothing is sent")
    events: list[EventKind] = Field(
        default_factory=lambda: list(EVENT_KINDS),
        max_length=len(EVENT_KINDS),
        description="which kinds of event to send",
    )
    warning_minutes: list[Literal[60, 30, 15, 10, 5, 1]] = Field(
        default_factory=lambda: list(DEFAULT_WARNING_MINUTES),  # type: ignore[arg-type]
        max_length=len(WARNING_CHOICES),
        description="which expiry warnings to send, in minutes before the expiry",
    )


class NotificationSettings(BaseModel):
    enabled: bool = True
    email: str | None = None
    email_status: EmailStatus | None = None
    slack_webhook: str | None = Field(
        default=None, description="masked: the host and the last 4 characters"
    )
    events: list[EventKind] = Field(default_factory=lambda: list(EVENT_KINDS))
    warning_minutes: list[int] = Field(default_factory=lambda: list(DEFAULT_WARNING_MINUTES))
