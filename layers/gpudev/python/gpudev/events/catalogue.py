"""The public events' names and their schema: the bus's source, the detail-types, the
schema's version. Operators' rules match on these (docs/notifications.md, "The event
schema"); changing one is a new schema version, never an edit of this one."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SOURCE = "gpu-dev"
SCHEMA_VERSION = "1"
QUEUED = "Reservation Queued"
ACTIVE = "Reservation Active"
WARNING = "Reservation Warning"
ENDED = "Reservation Ended"
HEALTH = "Reservation Health"
# Idle reclaim's warning (0044): a detail-type of its own, added to version 1. A `kind` on
# Reservation Warning would have changed what a Warning means to existing consumers.
IDLE = "Reservation Idle"
DETAIL_TYPES = (QUEUED, ACTIVE, WARNING, ENDED, HEALTH, IDLE)

SCHEMA_PATH = Path(__file__).resolve().parent / "reservation-event.v1.schema.json"


@cache
def event_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an event's `detail`, by detail-type."""
    return json.loads(SCHEMA_PATH.read_text())  # type: ignore[no-any-return]
