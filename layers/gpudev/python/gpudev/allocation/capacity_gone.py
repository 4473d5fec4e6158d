"""Waiting reservations whose capacity went away: their type's node groups were scaled down
(MaxSize 0, or below the nodes they need) while they waited. Waiting for the 48 h queue
timeout would only hide why nothing starts, so each allocator pass ends them once the
groups have stayed that way for `CAPACITY_GONE_PATIENCE_HOURS` (an operator resizing a
group back within that time loses no queue), cancelled with a reason that names the types
that have nodes — the same sentence a new request for them is refused with at submit
(reservations/rules.py `beyond_the_cluster`).

The rows are ended in the pass's transaction (so the pass's plan no longer sees them) and
their executions woken with `cancel` after it commits; their tear down finds them ended and
keeps that ending (lifecycle/end.sql)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from gpudev.models import ReservationStatus
from gpudev.repositories import GpuTypesRepository
from gpudev.repositories.allocations import AllocationsRepository
from gpudev.repositories.lifecycle import LifecycleRepository
from gpudev.reservations.rules import MAX_NODES, MULTINODE_TYPES, beyond_the_cluster

# How long a type's node groups must stay unable to hold a waiting reservation before it is
# ended, in clock hours (real time unless the local cloud scales hours down).
CAPACITY_GONE_PATIENCE_HOURS = 0.5
# At most this many ended a pass (each is one statement): the next pass ends the rest.
ENDED_PER_PASS = 200


@dataclass(frozen=True)
class Ended:
    reservation_id: str
    task_token: str
    reason: str


def end_capacity_gone(conn: psycopg.Connection[Any], seconds_per_hour: float) -> list[Ended]:
    """End, in the caller's transaction (which holds the pass lock), every waiting
    reservation its type can no longer hold; the ended ones with the tokens to wake."""
    gone = AllocationsRepository(conn).capacity_gone(
        sorted(MULTINODE_TYPES),
        MAX_NODES,
        CAPACITY_GONE_PATIENCE_HOURS * seconds_per_hour,
        ENDED_PER_PASS,
    )
    if not gone:
        return []
    catalogue = GpuTypesRepository(conn).list_active()
    by_name = {t.gpu_type: t for t in catalogue}
    rows = LifecycleRepository(conn)
    ended = []
    for request in gone:
        sentence = beyond_the_cluster(by_name[request.gpu_type], request.total_nodes, catalogue)
        if sentence is None:  # the row changed under us (cannot: locked); keep waiting
            continue
        reason = (
            f"cancelled while queued: {sentence} (the type's node groups could not hold it "
            f"for {CAPACITY_GONE_PATIENCE_HOURS * 60:g} min)"
        )
        if rows.end(request.reservation_id, ReservationStatus.CANCELLED, reason):
            ended.append(Ended(str(request.reservation_id), request.task_token, reason))
    return ended
