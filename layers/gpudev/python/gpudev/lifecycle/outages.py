"""What a reservation shows while a transient fault lasts: its status line says what it
waits for ("waiting for the Kubernetes API; starting the pod") from the first attempt the
fault fails, and goes back to what it said once a task runs through.

The state machine does the waiting (every state's Retry rides out `OUTAGE_LIMIT_MINUTES`;
docs/lifecycle.md, "Outages"); this module only tells the user. Writing the line is best
effort: a database that is out cannot take it (nor can the API read it then), and a failure
to write it must never change the task's own error.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any
from uuid import UUID

import psycopg

from gpudev.lifecycle.taxonomy import WAITING_LINES, waiting_for
from gpudev.observability import logger
from gpudev.repositories import LifecycleRepository

# The limit every state's retries are sized for (tests/unit/test_outage_limit.py).
OUTAGE_LIMIT_MINUTES = 30
# What `waiting` put in front of the status line (the lines hold no regex characters).
WAITING_PREFIX = "^(" + "|".join(WAITING_LINES) + "); "

Connect = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]


def record_waiting(connect: Connect, reservation_id: UUID, exc: BaseException) -> str | None:
    """Put what the reservation waits for on its status line; the line, or None when the
    fault names no dependency or the line could not be written."""
    line = waiting_for(exc)
    if line is None:
        return None
    try:
        with connect() as conn:
            LifecycleRepository(conn).waiting(reservation_id, line, WAITING_PREFIX)
    except Exception as write_failed:  # the database may be what is out
        logger.info(f"status line not written ({line}): {type(write_failed).__name__}")
        return None
    return line


def outage_over(rows: LifecycleRepository, reservation_id: UUID) -> None:
    """The status line as it was before the fault (nothing when there was none). Best
    effort, as `record_waiting`: the task it follows already did its work, and a failure
    here would run that work again; the next task that runs through clears it."""
    try:
        rows.outage_over(reservation_id, WAITING_PREFIX)
    except Exception as write_failed:  # a blip of the database the task no longer needs
        logger.info(f"status line not restored: {type(write_failed).__name__}")
