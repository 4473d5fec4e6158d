from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.db.rows import fetch_all, fetch_one
from gpudev.models import (
    GpuType,
    Reservation,
    ReservationEvent,
    ReservationStatus,
    Usage,
    UserLimits,
)
from gpudev.repositories.outbox import Outboxed, WithJob, fetch_with_job


class NamedDisk(BaseModel):
    """The state of the disk a request names, as the submit sees it."""

    state: str  # available | in_use | deleted | cloning
    reservation_id: UUID | None


class SubmitContext(BaseModel):
    """What a submit checks before writing anything."""

    bound_principal: str | None  # the principal the caller's username is bound to, if any
    catalogue: list[GpuType]
    disk: NamedDisk | None
    github_user: str | None = None  # the GitHub username in the caller's settings, if any


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
    profiling: bool = False
    # The image asked for and its digest (gpudev/images/); None: the default image.
    image: str | None = None
    image_digest: str | None = None
    image_pull: str | None = None
    preserve_entrypoint: bool = False  # the image's own entrypoint (images/entrypoint.py)
    docker: bool = False  # a Docker sidecar (docker/request.py, cluster/pod_docker.py)
    idle_timeout_minutes: int | None = None  # None: never reclaimed idle (utilisation/)
    image_build: str | None = None  # a Dockerfile's context hash (image_builds/builds.py)


@dataclass(frozen=True)
class Submitted:
    """What a submit did: whether the username is bound to the caller's principal (False:
    another principal's first call bound it; nothing written), the reservation (None when
    refused at a limit or not bound), whether this call created it, and the user's live
    usage before it."""

    bound: bool
    reservation: Reservation | None
    created: bool
    usage: Usage
    job: Outboxed | None = None  # the create job, in the outbox when created


# A change recorded on a reservation's row with the job announcing it.
Changed = WithJob[Reservation]


class ReservationsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def get(self, reservation_id: UUID) -> Reservation | None:
        return fetch_one(
            self._conn, "reservations/get", Reservation, {"reservation_id": reservation_id}
        )

    def list_for_user(
        self,
        user_id: str,
        statuses: list[ReservationStatus] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Reservation]:
        return fetch_all(
            self._conn,
            "reservations/list_for_user",
            Reservation,
            {
                "user_id": user_id,
                "statuses": [str(s) for s in statuses] if statuses else None,
                "limit": limit,
                "offset": offset,
            },
        )

    def submit_context(
        self, user_id: str, principal_arn: str, disk_name: str | None
    ) -> SubmitContext:
        """The username's bound principal, the active catalogue and the named disk's state,
        in one round trip."""
        with self._conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                query("reservations/submit_context"),
                {"user_id": user_id, "principal_arn": principal_arn, "disk_name": disk_name},
            ).fetchall()
        disk = None
        if rows[0]["disk_state"] is not None:
            disk = NamedDisk(
                state=rows[0]["disk_state"], reservation_id=rows[0]["disk_reservation_id"]
            )
        catalogue = [
            GpuType.model_validate({k: v for k, v in row.items() if k in GpuType.model_fields})
            for row in rows
            if row["gpu_type"] is not None
        ]
        return SubmitContext(
            bound_principal=rows[0]["bound_principal"],
            catalogue=catalogue,
            disk=disk,
            github_user=rows[0]["settings_github_user"],
        )

    def submit(
        self, username: str, principal_arn: str, new: NewReservation, limits: UserLimits
    ) -> Submitted:
        """Create the caller's user row if needed and the reservation, in one statement,
        unless the client request id was already used (that reservation is returned), the
        caller is at a limit, or the username is bound to another principal (nothing
        inserted in either case). Call after `submit_context` in the same transaction: it
        holds the caller's request lock."""
        with domain_errors(), self._conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(
                query("reservations/submit"),
                {
                    "username": username,
                    "principal_arn": principal_arn,
                    "max_live_reservations": limits.max_live_reservations,
                    "max_gpus": limits.max_gpus,
                    **new.model_dump(),
                },
            ).fetchone()
        assert row is not None  # one row, always
        usage = Usage(row["live_reservations"], row["live_gpus"])
        if row["outcome"] is None:
            return Submitted(row["bound"], None, False, usage)
        reservation = Reservation.model_validate(
            {k: v for k, v in row.items() if k in Reservation.model_fields}
        )
        created = row["outcome"] == "created"
        return Submitted(True, reservation, created, usage, Outboxed.from_row(row))

    def find_by_prefix(
        self, user_id: str, principal_arn: str, prefix: str
    ) -> tuple[str | None, list[Reservation]]:
        """The principal `user_id` is bound to (None: unknown user) and, when that is
        `principal_arn`, at most two of its reservations whose id starts with `prefix`."""
        with self._conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                query("reservations/find_by_prefix"),
                {"user_id": user_id, "principal_arn": principal_arn, "prefix": prefix},
            ).fetchall()
        if not rows:
            return None, []
        matches = [Reservation.model_validate(row) for row in rows if row["reservation_id"]]
        return rows[0]["bound_principal"], matches

    def set_status(
        self, reservation_id: UUID, status: ReservationStatus, detail: str | None = None
    ) -> Reservation | None:
        """Move to `status`; final statuses stamp `reservation_ended` (and cancel/fail times)."""
        with domain_errors():
            return fetch_one(
                self._conn,
                "reservations/set_status",
                Reservation,
                {"reservation_id": reservation_id, "status": str(status), "detail": detail},
            )

    def events(
        self, reservation_id: UUID, limit: int = 500, offset: int = 0
    ) -> list[ReservationEvent]:
        """One page of the reservation's timeline, oldest first."""
        return fetch_all(
            self._conn,
            "reservations/events",
            ReservationEvent,
            {"reservation_id": reservation_id, "limit": limit, "offset": offset},
        )

    # The changes below write their job to the outbox in the same statement.
    def _change(self, name: str, params: dict[str, Any]) -> Changed | None:
        return fetch_with_job(self._conn, name, Reservation, params)

    def request_cancel(self, reservation_id: UUID, reason: str | None = None) -> Changed | None:
        """Stamp the cancel request (an operator's with its `reason`, which becomes the final
        status's detail); None if already requested or no longer live."""
        return self._change(
            "reservations/request_cancel", {"reservation_id": reservation_id, "reason": reason}
        )

    def extend(
        self, reservation_id: UUID, hours: float, seconds_per_hour: float = 3600.0
    ) -> Changed | None:
        """Add `hours` to the total, with a history entry that says the new expiry (in the
        lifecycle's clock: `seconds_per_hour`); None if the reservation is no longer live."""
        return self._owner_change(
            reservation_id, add_hours=hours, seconds_per_hour=seconds_per_hour
        )

    def add_user(self, reservation_id: UUID, github_user: str) -> Changed | None:
        """None if the user was already there or the reservation is no longer live."""
        return self._owner_change(reservation_id, github_user=github_user)

    def remove_user(self, reservation_id: UUID, github_user: str) -> Changed | None:
        """None if the user was not there (logins ignore case) or the reservation is no
        longer live."""
        return self._owner_change(reservation_id, remove_user=github_user)

    def set_jupyter(self, reservation_id: UUID, enabled: bool) -> Changed | None:
        """None if nothing changed or the reservation is no longer live."""
        return self._owner_change(reservation_id, jupyter_enabled=enabled)

    def _owner_change(
        self,
        reservation_id: UUID,
        *,
        add_hours: float | None = None,
        github_user: str | None = None,
        remove_user: str | None = None,
        jupyter_enabled: bool | None = None,
        seconds_per_hour: float = 3600.0,
    ) -> Changed | None:
        """One statement for every owner's change: the one asked for is set, the rest None."""
        return self._change(
            "reservations/change",
            {
                "reservation_id": reservation_id,
                "add_hours": add_hours,
                "github_user": github_user,
                "remove_user": remove_user,
                "jupyter_enabled": jupyter_enabled,
                "seconds_per_hour": seconds_per_hour,
            },
        )
