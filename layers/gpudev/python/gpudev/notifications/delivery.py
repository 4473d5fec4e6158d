"""The notifier's work for one event from the bus: whom to tell, how, and only once.

- The user's contacts and preferences decide (nothing when there are none, notifications are
  off, the kind is not wanted, or the warning's minutes are not among theirs).
- Each channel's send is claimed first (notification_deliveries: one row per event and
  channel), so the same event delivered twice (the relay's at-least-once, Lambda's retries)
  sends nothing twice; a channel that failed is claimed again by the retry, one that was
  sent is not.
- An e-mail goes only to an address SES verified; a pending one is asked about once per event.
- Per user, at most `rate_per_hour` messages an hour: past it a send is recorded
  `rate_limited` and never made, so a flapping reservation cannot spam.
- A channel that failed fails the invocation (`DeliveryFailed`, after the other channel had
  its go): Lambda tries the event again, then leaves it in the dead-letter queue. Nothing
  here touches the reservation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from uuid import UUID

import psycopg

from gpudev.notifications.channels import ChannelFailed, SesEmail, SlackWebhook
from gpudev.notifications.messages import KIND_OF, BusEvent, Message, message_for
from gpudev.notifications.vault import WebhookVault
from gpudev.observability import logger
from gpudev.repositories.notifications import ContactRow, NotificationsRepository

HOUR_SECONDS = 3600.0


class DeliveryFailed(Exception):
    """A channel failed; Lambda retries the event (the sent channels are not sent again)."""


@dataclass
class Delivered:
    sent: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already sent, unverified, limited...


@dataclass
class Notifier:
    conn: psycopg.Connection[Any]  # autocommit: each claim and settle commits by itself
    vault: WebhookVault
    email: SesEmail
    slack: SlackWebhook
    rate_per_hour: int
    # A claim older than this whose send never settled (its environment died) is taken over.
    stale_seconds: float = 300.0

    @property
    def _rows(self) -> NotificationsRepository:
        return NotificationsRepository(self.conn)

    def notify(self, event: BusEvent) -> Delivered:
        detail = event.detail
        done = Delivered()
        contact = self._rows.contact(detail.user_id)
        if contact is None or not _wanted(contact, event):
            done.skipped.append("not wanted")
            return done
        message = message_for(event)
        failures: list[str] = []
        for channel, send in self._channels(contact, done):
            outcome = self._send_once(event, channel, partial(send, message))
            if outcome == "failed":
                failures.append(channel)
            (done.sent if outcome == "sent" else done.skipped).append(channel)
        logger.info(
            "notified",
            extra={
                "event_id": detail.event_id,
                "detail_type": event.detail_type,
                "sent": done.sent,
                "skipped": done.skipped,
            },
        )
        if failures:
            raise DeliveryFailed(f"{', '.join(failures)} failed for {detail.event_id}")
        return done

    def _channels(
        self, contact: ContactRow, done: Delivered
    ) -> list[tuple[str, Callable[[Message], None]]]:
        channels: list[tuple[str, Callable[[Message], None]]] = []
        address = contact.email
        if address is not None:
            if self._verified(contact, address):
                channels.append(("email", lambda m: self.email.send(address, m)))
            else:
                done.skipped.append("email (not verified yet)")
        ciphertext = contact.webhook_ciphertext
        if ciphertext is not None:
            user = contact.user_id

            def post(message: Message) -> None:
                self.slack.post(self.vault.open(user, bytes(ciphertext)), message)

            channels.append(("slack", post))
        return channels

    def _verified(self, contact: ContactRow, address: str) -> bool:
        if contact.email_status == "verified":
            return True
        try:
            verified = self.email.is_verified(address)
        except ChannelFailed:
            return False
        if verified:
            self._rows.mark_verified(contact.user_id, address)
        return verified

    def _send_once(self, event: BusEvent, channel: str, send: Callable[[], None]) -> str:
        d = event.detail
        claimed = self._rows.claim_delivery(
            d.event_id,
            channel,
            d.user_id,
            UUID(d.reservation_id),
            event.detail_type,
            self.stale_seconds,
        )
        if claimed is None:
            return "already"
        if self._rows.recent_sends(d.user_id, HOUR_SECONDS) >= self.rate_per_hour:
            self._rows.settle_delivery(d.event_id, channel, "rate_limited")
            logger.warning("a user's notifications are rate-limited", extra={"user": d.user_id})
            return "rate_limited"
        try:
            send()
        except Exception as error:  # a send never escapes: it fails its channel
            reason = str(error) if isinstance(error, ChannelFailed) else type(error).__name__
            self._rows.settle_delivery(d.event_id, channel, "failed", reason)
            logger.warning(
                "a notification was not sent",
                extra={"event_id": d.event_id, "channel": channel, "reason": reason},
            )
            return "failed"
        self._rows.settle_delivery(d.event_id, channel, "sent")
        return "sent"


def _wanted(contact: ContactRow, event: BusEvent) -> bool:
    kind = KIND_OF.get(event.detail_type)
    if not contact.enabled or kind not in contact.events:
        return False
    if kind == "warning" and event.detail.minutes_left is not None:
        return event.detail.minutes_left in contact.warning_minutes
    return True
