"""What users see of capacity: per-type availability (kept by the availability updater)
with live demand from reservations and the wait a new request would get (kept by the
allocator, allocation/plan.py), and cluster totals — one SQL round trip each after the
caller's binding check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gpudev.callers import bound_user
from gpudev.identity import Caller
from gpudev.models import TypeAvailability

if TYPE_CHECKING:
    import psycopg

__all__ = ["ClusterStatus", "TypeAvailability", "availability_by_type", "cluster_status"]


class Availability(BaseModel):
    gpu_types: list[TypeAvailability]


class ClusterStatus(BaseModel):
    total_gpus: int
    available_gpus: int
    gpus_in_use: int
    queued_gpus: int
    active_reservations: int
    queued_reservations: int
    by_gpu_type: list[TypeAvailability]


def availability_by_type(conn: psycopg.Connection[Any]) -> list[TypeAvailability]:
    # Here, not at the top: the repositories import psycopg, which the API's import should
    # not pay for (its routes import this module; bench/cold_start.py).
    from gpudev.repositories.capacity import CapacityRepository

    return CapacityRepository(conn).by_type()


def availability(conn: psycopg.Connection[Any], caller: Caller) -> Availability:
    bound_user(conn, caller)
    return Availability(gpu_types=availability_by_type(conn))


def cluster_status(conn: psycopg.Connection[Any], caller: Caller) -> ClusterStatus:
    bound_user(conn, caller)
    types = availability_by_type(conn)
    return ClusterStatus(
        total_gpus=sum(t.total_cluster_gpus for t in types if t.max_per_node),
        available_gpus=sum(t.available_gpus for t in types if t.max_per_node),
        gpus_in_use=sum(t.gpus_in_use for t in types),
        queued_gpus=sum(t.queued_gpus for t in types),
        active_reservations=sum(t.running_reservations for t in types),
        queued_reservations=sum(t.queue_length for t in types),
        by_gpu_type=types,
    )
