"""The notification tables (migrations/0039_bus_events.sql): each user's contacts (the API
writes them, the notifier reads them) and the notifier's deliveries (claimed before a send,
settled after it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query


@dataclass(frozen=True)
class ContactRow:
    user_id: str
    enabled: bool
    email: str | None
    email_status: str | None
    webhook_ciphertext: bytes | None
    webhook_hint: str | None
    events: list[str]
    warning_minutes: list[int]


class NotificationsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def contact(self, user_id: str) -> ContactRow | None:
        with self._conn.cursor(row_factory=class_row(ContactRow)) as cur:
            return cur.execute(query("notifications/contact"), {"user_id": user_id}).fetchone()

    def save_contact(self, row: ContactRow) -> ContactRow:
        with domain_errors(), self._conn.cursor(row_factory=class_row(ContactRow)) as cur:
            saved = cur.execute(query("notifications/save_contact"), row.__dict__).fetchone()
        assert saved is not None
        return saved

    def mark_verified(self, user_id: str, email: str) -> None:
        self._conn.execute(
            query("notifications/mark_verified"), {"user_id": user_id, "email": email}
        )

    def claim_delivery(
        self,
        event_id: str,
        channel: str,
        user_id: str,
        reservation_id: UUID,
        detail_type: str,
        stale_seconds: float,
    ) -> int | None:
        """The attempt number if this invocation may send; None: nothing to do."""
        row = self._conn.execute(
            query("notifications/claim_delivery"),
            {
                "event_id": event_id,
                "channel": channel,
                "user_id": user_id,
                "reservation_id": reservation_id,
                "detail_type": detail_type,
                "stale_seconds": stale_seconds,
            },
        ).fetchone()
        return None if row is None else int(row[0])

    def settle_delivery(
        self, event_id: str, channel: str, status: str, error: str | None = None
    ) -> None:
        self._conn.execute(
            query("notifications/settle_delivery"),
            {"event_id": event_id, "channel": channel, "status": status, "error": error},
        )

    def recent_sends(self, user_id: str, window_seconds: float) -> int:
        row = self._conn.execute(
            query("notifications/recent_sends"),
            {"user_id": user_id, "window_seconds": window_seconds},
        ).fetchone()
        assert row is not None
        return int(row[0])
