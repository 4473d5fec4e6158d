"""The event relay: puts the events the lifecycle wrote to `bus_events` on the EventBridge
bus, after their commit (migrations/0039_bus_events.sql writes them with the row change).

- One batch a run, locked `FOR UPDATE SKIP LOCKED` in one transaction (a second relay skips
  those rows), put in PutEvents calls of at most ten entries (EventBridge's limit), and
  marked published as the bus took each; an entry the bus refused (or a call that failed)
  is counted and put again by the next run.
- At least once on the bus: the mark failing after a put puts the event again. Each carries
  its `event_id` (the row's key), so consumers (the notifier) act on it once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from gpudev.events.catalogue import SOURCE
from gpudev.observability import logger
from gpudev.repositories.bus_events import BusEventsRepository, UnpublishedEvent

RELAY_BATCH_SIZE = 100
PUT_EVENTS_LIMIT = 10  # entries per PutEvents call


@dataclass(frozen=True)
class Published:
    published: int
    refused: int  # the bus refused them, or the call failed: put again next run


def relay_bus_events(
    conn: psycopg.Connection[Any],
    events: Any,
    bus_name: str,
    batch_size: int = RELAY_BATCH_SIZE,
) -> Published:
    """Put one batch of unpublished events on `bus_name` and mark what the bus took. `conn`
    must be in autocommit mode, so the transaction holding the batch's locks is real."""
    published: list[str] = []
    refused: list[str] = []
    repository = BusEventsRepository(conn)
    with conn.transaction():
        rows = repository.lock_unpublished(batch_size)
        for start in range(0, len(rows), PUT_EVENTS_LIMIT):
            chunk = rows[start : start + PUT_EVENTS_LIMIT]
            taken = _put(events, bus_name, chunk)
            published += [row.event_key for row, ok in zip(chunk, taken, strict=True) if ok]
            refused += [row.event_key for row, ok in zip(chunk, taken, strict=True) if not ok]
        if rows:
            repository.settle(published, refused)
    if refused:
        logger.error(
            "the bus refused events; the next run puts them again",
            extra={"refused": len(refused), "published": len(published)},
        )
    return Published(len(published), len(refused))


def _put(events: Any, bus_name: str, rows: list[UnpublishedEvent]) -> list[bool]:
    """One PutEvents call; per entry, whether the bus took it (results are in entry order)."""
    entries = [
        {
            "Source": SOURCE,
            "DetailType": row.detail_type,
            "Detail": json.dumps(row.detail, separators=(",", ":")),
            "Resources": [],
            "EventBusName": bus_name,
        }
        for row in rows
    ]
    try:
        answer = events.put_events(Entries=entries)
    except (BotoCoreError, ClientError) as exc:
        logger.warning("PutEvents failed", extra={"error": str(exc), "entries": len(entries)})
        return [False] * len(entries)
    return ["EventId" in result and not result.get("ErrorCode") for result in answer["Entries"]]
