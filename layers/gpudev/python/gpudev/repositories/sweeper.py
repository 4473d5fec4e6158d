"""The sweeper's reads and writes (gpudev/sweeper/service.py owns the transactions): its
run lock, the rows it judges, the ends it applies, the create jobs it re-sent and the disks
still held by ended reservations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query
from gpudev.models import ReservationStatus

# Statuses in which a reservation has (or should have) a running execution.
WITH_EXECUTION = frozenset(
    {ReservationStatus.QUEUED, ReservationStatus.PREPARING, ReservationStatus.ACTIVE}
)


@dataclass(frozen=True)
class LiveRow:
    reservation_id: UUID
    user_id: str
    status: ReservationStatus
    execution_arn: str | None
    created_at: datetime
    cancel_requested_at: datetime | None
    create_job_resends: int
    create_job_resent_at: datetime | None
    read_at: datetime  # the database's now() when the row was read
    reservation_ended: datetime | None = None  # set on the ended rows the sweeper reads
    # What a requested change needs to be repaired (sweeper/plan.py `wakes`): the parked
    # execution's token, whether a change is not applied yet, and the change-wake bound's age
    # (change_wakes; None: never woken for one).
    task_token: str | None = None
    change_generation: int = 0
    applied_generation: int = 0
    change_woken_seconds: float | None = None


@dataclass(frozen=True)
class EndReservation:
    reservation_id: UUID
    execution_arn: str | None  # as read: the end only applies if it is still the same
    status: ReservationStatus
    reason: str


@dataclass(frozen=True)
class HeldDisk:
    """A disk held by a reservation that has ended, and the execution that should free it."""

    reservation_id: UUID
    execution_arn: str | None


@dataclass(frozen=True)
class SweptRows:
    live: list[LiveRow]
    ended_at: dict[str, datetime]  # reservation id → reservation_ended, of listed objects'


class SweeperRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def try_lock(self, key: int) -> bool:
        row = self._conn.execute(query("sweeper/try_lock"), {"key": key}).fetchone()
        return bool(row and row[0])

    def unlock(self, key: int) -> None:
        self._conn.execute(query("sweeper/unlock"), {"key": key})

    def rows(self, object_reservation_ids: Sequence[UUID]) -> SweptRows:
        """Every live row, and when the ended ones among the objects' reservations ended."""
        with self._conn.cursor(row_factory=class_row(LiveRow)) as cur:
            rows = cur.execute(
                query("sweeper/live"), {"object_reservation_ids": list(object_reservation_ids)}
            ).fetchall()
        live = {ReservationStatus.PENDING, *WITH_EXECUTION}
        return SweptRows(
            [row for row in rows if row.status in live],
            {
                str(row.reservation_id): row.reservation_ended
                for row in rows
                if row.status not in live and row.reservation_ended is not None
            },
        )

    def end(self, end: EndReservation) -> bool:
        """End the row if it is still as judged (locked first); whether it was ended. Run it
        in the transaction that releases its slots."""
        held = self._conn.execute(
            query("sweeper/hold_unchanged"),
            {"reservation_id": end.reservation_id, "execution_arn": end.execution_arn},
        ).fetchone()
        if held is None:
            return False
        ended = self._conn.execute(
            query("lifecycle/end"),
            {
                "reservation_id": end.reservation_id,
                "status": str(end.status),
                "detail": end.reason,
            },
        ).fetchone()
        return ended is not None

    def held_disks(self) -> list[HeldDisk]:
        with self._conn.cursor(row_factory=class_row(HeldDisk)) as cur:
            return cur.execute(query("sweeper/held_disks")).fetchall()

    def record_resends(self, reservation_ids: Sequence[UUID]) -> list[UUID]:
        rows = self._conn.execute(
            query("sweeper/record_resends"), {"reservation_ids": list(reservation_ids)}
        ).fetchall()
        return [row[0] for row in rows]
