from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.models import Reservation, ReservationEvent, ReservationStatus


class NewReservation(BaseModel):
    reservation_id: UUID
    user_id: str
    gpu_type: str
    gpu_count: int
    duration_hours: float
    total_nodes: int = 1
    client_request_id: str | None = None
    name: str | None = None
    instance_type: str | None = None
    github_user: str | None = None
    disk_name: str | None = None
    jupyter_enabled: bool = False


class ReservationsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _cursor(self) -> psycopg.Cursor[Reservation]:
        return self._conn.cursor(row_factory=class_row(Reservation))

    def create(self, new: NewReservation) -> Reservation:
        with domain_errors(), self._cursor() as cur:
            row = cur.execute(query("reservations/insert"), new.model_dump()).fetchone()
        assert row is not None
        return row

    def get(self, reservation_id: UUID) -> Reservation | None:
        with self._cursor() as cur:
            return cur.execute(
                query("reservations/get"), {"reservation_id": reservation_id}
            ).fetchone()

    def list_for_user(
        self,
        user_id: str,
        statuses: list[ReservationStatus] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Reservation]:
        with self._cursor() as cur:
            return cur.execute(
                query("reservations/list_for_user"),
                {
                    "user_id": user_id,
                    "statuses": [str(s) for s in statuses] if statuses else None,
                    "limit": limit,
                    "offset": offset,
                },
            ).fetchall()

    def submit(self, username: str, principal_arn: str, new: NewReservation) -> Reservation | None:
        """Create the caller's user row if needed and the reservation, in one statement;
        None when the client request id was already used (nothing inserted)."""
        with domain_errors(), self._cursor() as cur:
            return cur.execute(
                query("reservations/submit"),
                {"username": username, "principal_arn": principal_arn, **new.model_dump()},
            ).fetchone()

    def get_by_client_request(self, user_id: str, client_request_id: str) -> Reservation | None:
        with self._cursor() as cur:
            return cur.execute(
                query("reservations/get_by_client_request"),
                {"user_id": user_id, "client_request_id": client_request_id},
            ).fetchone()

    def find_by_prefix(self, user_id: str, prefix: str) -> list[Reservation]:
        """At most two of the user's reservations whose id starts with `prefix`."""
        with self._cursor() as cur:
            return cur.execute(
                query("reservations/find_by_prefix"), {"user_id": user_id, "prefix": prefix}
            ).fetchall()

    def set_status(
        self, reservation_id: UUID, status: ReservationStatus, detail: str | None = None
    ) -> Reservation | None:
        """Move to `status`; final statuses stamp `reservation_ended` (and cancel/fail times)."""
        with domain_errors(), self._cursor() as cur:
            return cur.execute(
                query("reservations/set_status"),
                {"reservation_id": reservation_id, "status": str(status), "detail": detail},
            ).fetchone()

    def events(self, reservation_id: UUID) -> list[ReservationEvent]:
        with self._conn.cursor(row_factory=class_row(ReservationEvent)) as cur:
            return cur.execute(
                query("reservations/events"), {"reservation_id": reservation_id}
            ).fetchall()

    def request_cancel(self, reservation_id: UUID) -> Reservation | None:
        """Stamp the cancel request; None if already requested or no longer live."""
        with self._cursor() as cur:
            return cur.execute(
                query("reservations/request_cancel"), {"reservation_id": reservation_id}
            ).fetchone()
