"""The bus_events table (migrations/0039_bus_events.sql): what the event relay reads and
marks (gpudev/events/relay.py owns the transaction). Rows are written by a trigger only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from gpudev.db.queries import query


@dataclass(frozen=True)
class UnpublishedEvent:
    event_key: str
    detail_type: str
    detail: dict[str, Any]
    relay_attempts: int


class BusEventsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def lock_unpublished(self, batch_size: int) -> list[UnpublishedEvent]:
        """The oldest events not on the bus yet, locked until the caller's transaction ends
        (rows another transaction holds are skipped)."""
        rows = self._conn.execute(
            query("bus_events/relay_batch"), {"batch_size": batch_size}
        ).fetchall()
        return [UnpublishedEvent(*row) for row in rows]

    def settle(self, published: Sequence[str], refused: Sequence[str]) -> None:
        """Mark the events the bus took; count an attempt on those it refused."""
        self._conn.execute(
            query("bus_events/relay_done"),
            {"published": list(published), "refused": list(refused)},
        )
