"""What operators do to everyone's reservations: list the live ones, find any one (the
timeline route reads it through `find_any_reservation`), force-cancel one with a reason
(the owner's cancel path, the reason recorded in the status history). The route
checks the caller is an operator (`identity.require_admin`) before any of this runs."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.errors import Conflict, NotFound
from gpudev.identity import Caller
from gpudev.jobs import JobQueue
from gpudev.models import Reservation
from gpudev.repositories import UsageRepository
from gpudev.reservations.service import record_cancel, reservation_id_or_prefix


def live_reservations(conn: psycopg.Connection[Any], caller: Caller) -> list[Reservation]:
    """Every live reservation, everyone's, oldest first (one round trip)."""
    return UsageRepository(conn).live()


def force_cancel(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    id_or_prefix: str,
    reason: str,
) -> Reservation:
    """Cancel anyone's live reservation; its final status reads `cancelled by operator
    <username>: <reason>`. Ended → 409; a repeat (already requested) changes nothing.

    The name recorded is the operator's username bound to their principal, as every user's
    is (`bound_user`: created on first sight, 403 with nothing written for a session whose
    name is another principal's username), so an operator cannot record a cancel in
    someone else's name by choosing a session name."""
    reservation_id_or_prefix(id_or_prefix)  # a malformed id: 422 before anything is written
    operator = bound_user(conn, caller)
    found = find_any_reservation(conn, caller, id_or_prefix)
    recorded = f"cancelled by operator {operator.username}: {reason}"
    return record_cancel(conn, queue, found, recorded)


def find_any_reservation(
    conn: psycopg.Connection[Any], caller: Caller, id_or_prefix: str
) -> Reservation:
    """Anyone's reservation by full id or a unique prefix of at least 8 characters (the
    operators' `ReservationFinder`: the route checked the caller is one); 404 if none, 409
    if the prefix matches more than one, 422 for what is not an id."""
    wanted = reservation_id_or_prefix(id_or_prefix)
    matches = UsageRepository(conn).find_any(wanted)
    if not matches:
        raise NotFound(f"no reservation {wanted!r}")
    if len(matches) > 1:
        raise Conflict(f"{wanted!r} matches more than one reservation: give more characters")
    return matches[0]
