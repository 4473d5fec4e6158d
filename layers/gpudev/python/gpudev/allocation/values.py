"""The planner's values (plan.py): what a pass gives it (nodes, holdings, the queue) and
what it decides (grants, waits), and the one definition of a reservation's expected end.

A reservation's expected end (`expected_end`) is its grant time plus the provisioning
allowance plus its duration: used for what a pass grants, for backfill, in the ETA replay
(replay.py), and by the service for a granted reservation's holding read back from its row,
so a grant's end is the same number in the pass that grants and in every pass after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class NodeCapacity(NamedTuple):
    name: str
    gpu_type: str
    slots: int
    free_slots: tuple[int, ...]  # slot numbers free now (unallocated and unused by others)
    profiling: bool = False  # dedicated to profiling (cluster/vocabulary.py PROFILING_LABEL)
    # its zone and placement group (cluster/vocabulary.py `fabric_of`): a multinode request
    # takes nodes of one fabric only, so EFA (which never crosses a zone) reaches them all
    fabric: str = ""


class Holding(NamedTuple):
    """Slots of a node that a live reservation holds until `ends_at` (epoch seconds)."""

    node: str
    slots: int
    ends_at: float


class Request(NamedTuple):
    reservation_id: str  # a UUID as text
    gpu_type: str
    slots_per_node: int
    nodes: int
    duration_seconds: float
    # CAP_SYS_ADMIN: granted whole nodes only, on the type's profiling nodes if it has any
    profiling: bool = False
    # waiting on a task token (queued and parked): only a parked request can be granted. One
    # not parked yet (pending, or queued before its park) keeps its place in the order: it
    # is never granted, and later requests pass it only as backfill (plan.py)
    parked: bool = True


class Grant(NamedTuple):
    reservation_id: str  # a UUID as text
    placements: tuple[tuple[str, tuple[int, ...]], ...]  # (node, slots) per rank


class Wait(NamedTuple):
    reservation_id: str  # a UUID as text
    position: int
    eta_seconds: float | None  # None: it cannot fit even on an empty cluster


class TypeDecisions(NamedTuple):
    grants: list[Grant]  # real reservations only
    waits: list[Wait]
    probe_eta: float | None  # a new request's ETA (0.0: it would start now; None: never)


@dataclass
class Decisions:
    grants: list[Grant] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    # per GPU type with nodes or a queue: a new one-slot request's ETA (None: never fits)
    next_request_waits: dict[str, float | None] = field(default_factory=dict)


def expected_end(granted_at: float, duration_seconds: float, allowance_seconds: float) -> float:
    """When a reservation granted at `granted_at` (epoch seconds) is expected to give its
    capacity back until it is active (then its expiry tells): the provisioning allowance
    (how long it may take to become ready), then its whole duration."""
    return granted_at + (allowance_seconds + duration_seconds)


PROBE = "probe"  # the probe request's id; never a reservation's (a UUID as text)
