"""Reservation requests from the API: validate at submit time, record, and enqueue the job,
in at most three SQL round trips (catalogue; caller + reservation in one statement; the
first reservation again when a client request id repeats)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from pydantic import BaseModel, Field

from gpudev.errors import Conflict, NotFound
from gpudev.identity import Caller
from gpudev.jobs import CancelReservationJob, CreateReservationJob, JobQueue
from gpudev.models import Reservation
from gpudev.repositories import GpuTypesRepository, NewReservation, ReservationsRepository
from gpudev.reservations.rules import (
    check_disk_name,
    check_github_username,
    check_hours,
    resolve_shape,
)

MIN_PREFIX = 8


class ReservationRequest(BaseModel):
    gpu_type: str = Field(min_length=1, max_length=50)
    gpu_count: int = Field(ge=0, le=64)
    hours: float = Field(gt=0)
    name: str | None = Field(default=None, max_length=63)
    disk_name: str | None = Field(default=None, description="a named disk, or null for none")
    jupyter: bool = False
    github_user: str | None = None
    client_request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="repeat it to retry safely: the first reservation is returned",
    )


def submit_reservation(
    conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, request: ReservationRequest
) -> tuple[Reservation, bool]:
    """The reservation and whether this call created it (False: a repeated request id)."""
    shape = resolve_shape(
        GpuTypesRepository(conn).list_active(), request.gpu_type, request.gpu_count
    )
    check_hours(request.hours)
    if request.disk_name is not None:
        check_disk_name(request.disk_name)
    if request.github_user is not None:
        check_github_username(request.github_user)
    new = NewReservation(
        reservation_id=uuid.uuid4(),
        user_id=caller.username,
        client_request_id=request.client_request_id,
        name=request.name,
        gpu_type=shape.gpu_type.gpu_type,
        gpu_count=shape.gpu_count,
        total_nodes=shape.total_nodes,
        instance_type=shape.gpu_type.instance_type,
        duration_hours=request.hours,
        github_user=request.github_user,
        disk_name=request.disk_name,
        jupyter_enabled=request.jupyter,
    )
    reservations = ReservationsRepository(conn)
    with conn.transaction():
        created = reservations.submit(caller.username, caller.principal_arn, new)
        if created is not None:
            # Sent before commit: if SQS refuses, the reservation is rolled back with it.
            queue.send(
                CreateReservationJob(reservation_id=created.reservation_id, user_id=created.user_id)
            )
            return created, True
    assert request.client_request_id is not None  # only a repeated id inserts nothing
    existing = reservations.get_by_client_request(caller.username, request.client_request_id)
    if existing is None:  # pragma: no cover - the conflict implies the row exists
        raise Conflict("the reservation for this client request id could not be read")
    return existing, False


def find_reservation(
    conn: psycopg.Connection[Any], caller: Caller, id_or_prefix: str
) -> Reservation:
    """By full id or a unique prefix of at least 8 characters; others' are never found."""
    wanted = id_or_prefix.strip().lower()
    if len(wanted) < MIN_PREFIX:
        raise NotFound(f"reservation ids are at least {MIN_PREFIX} characters; got {wanted!r}")
    matches = ReservationsRepository(conn).find_by_prefix(caller.username, wanted)
    if not matches:
        raise NotFound(f"no reservation {wanted!r}")
    if len(matches) > 1:
        raise Conflict(f"{wanted!r} matches more than one reservation: give more characters")
    return matches[0]


def request_cancel(
    conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, id_or_prefix: str
) -> Reservation:
    """Record the cancel request and queue it once; a repeat is accepted and changes nothing."""
    reservation = find_reservation(conn, caller, id_or_prefix)
    if reservation.status.is_final:
        raise Conflict(
            f"reservation {str(reservation.reservation_id)[:8]} is already {reservation.status}"
        )
    with conn.transaction():
        requested = ReservationsRepository(conn).request_cancel(reservation.reservation_id)
        if requested is None:
            return reservation  # already requested: the first request stands
        queue.send(
            CancelReservationJob(reservation_id=requested.reservation_id, user_id=requested.user_id)
        )
    return requested
