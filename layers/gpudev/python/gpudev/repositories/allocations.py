"""The allocator's aggregate: the cluster's nodes and slots (`cluster_nodes`, `node_slots`),
`allocations`, and the grant columns of `reservations` (queue position, estimated start,
granted and signalled times). Its only writer is the allocator
(`gpudev/allocation/service.py`), which owns the transaction and takes the pass lock in it.

Rows are frozen dataclasses rather than pydantic models: a pass reads every node and every
queued reservation, and psycopg already gives typed values. The queue is read as columns
(`QueueColumns`), not one object per row: at 100,000 queued (`bench/allocator.py`) the row
objects cost a quarter of a pass; the waits to record are written from columns too
(`QueueWaits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.db.arrays import int4_array, register_binary_arrays, timestamptz_array, uuid_array
from gpudev.db.queries import query
from gpudev.db.rows import column_arrays, fetch_all, fetch_columns


@dataclass(frozen=True, slots=True)
class SeenNode:
    """A node as this pass saw it in the cluster."""

    name: str
    gpu_type: str
    slots: int
    schedulable: bool
    node_ip: str | None
    external_address: str | None = None
    profiling: bool = False  # dedicated to profiling (cluster/vocabulary.py PROFILING_LABEL)
    fabric: str = ""  # zone and placement group (cluster/vocabulary.py fabric_of)


@dataclass(frozen=True, slots=True)
class NodeState:
    """A known node with its allocated slot numbers and the reservations holding them."""

    node_name: str
    gpu_type: str
    slots: int
    schedulable: bool
    profiling: bool  # dedicated to profiling
    allocated: list[int]
    holders: list[str]  # reservation ids, as text
    held_by_profiling: bool  # a holder is a profiling reservation: no slot is free
    fabric: str = ""  # zone and placement group: multinode grants stay in one


@dataclass(frozen=True, slots=True)
class HeldSlots:
    """Slots one live reservation holds on one node, with what tells when they come back."""

    node_name: str
    slots: int
    expires_at: datetime | None  # once active
    granted_at: datetime
    duration_hours: float


@dataclass(frozen=True, slots=True)
class QueueColumns:
    """The waiting reservations, one tuple per column, row i of each being the i-th in
    FIFO order per GPU type. Ids are text, not UUIDs: a pass hashes and compares them by the
    100,000, and a str does both in C."""

    reservation_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    gpu_counts: tuple[int, ...]
    total_nodes: tuple[int, ...]
    duration_hours: tuple[float, ...]
    profiling: tuple[bool, ...]
    parked: tuple[bool, ...]  # on a task token: only these can be granted
    queue_positions: tuple[int | None, ...]  # as the last pass recorded them
    # the estimated start the last pass recorded, in epoch seconds (`date_part`: the
    # timestamptz's microseconds / 1e6, correctly rounded, so one start is one float)
    estimated_starts: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class CapacityGone:
    """A waiting reservation its type's node groups can no longer ever hold."""

    reservation_id: UUID
    task_token: str
    gpu_type: str
    total_nodes: int


@dataclass(frozen=True, slots=True)
class SlotGrant:
    node_name: str
    slot: int
    reservation_id: str  # as text (QueueColumns)
    rank: int  # the node's rank among the reservation's nodes


@dataclass(frozen=True, slots=True)
class QueueWaits:
    """Waiting reservations' positions and estimated starts to record, as columns (row i of
    each is one reservation), like the queue they were planned from (`QueueColumns`)."""

    reservation_ids: Sequence[str]  # as text (QueueColumns)
    positions: Sequence[int]
    starts_at: Sequence[datetime | None]  # the estimated start; None: it never fits


@dataclass(frozen=True, slots=True)
class TypeWait:
    gpu_type: str
    minutes: int | None  # a new request's ETA; None: no ETA


@dataclass(frozen=True, slots=True)
class UnsignalledGrant:
    reservation_id: UUID
    task_token: str
    execution_arn: str | None


class AllocationsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def lock(self) -> None:
        """One allocator pass at a time, until the caller's transaction ends."""
        self._conn.execute(query("allocation/lock"))

    def sync_nodes(self, nodes: Sequence[SeenNode]) -> None:
        """Upsert the nodes seen, with their slots; nodes not seen become unschedulable."""
        self._conn.execute(
            query("allocation/sync_nodes"),
            column_arrays(
                nodes,
                "name",
                "gpu_type",
                "slots",
                "schedulable",
                "node_ip",
                "external_address",
                "profiling",
                "fabric",
            ),
        )

    def nodes(self) -> list[NodeState]:
        return fetch_all(self._conn, "allocation/nodes", NodeState)

    def holdings(self) -> list[HeldSlots]:
        return fetch_all(self._conn, "allocation/holdings", HeldSlots)

    def capacity_gone(
        self,
        multinode_types: Sequence[str],
        most_nodes: int,
        patience_seconds: float,
        batch: int,
    ) -> list[CapacityGone]:
        """Up to `batch` waiting reservations needing more nodes than their type's node
        groups have been able to hold for `patience_seconds` (allocation/capacity_gone.sql),
        locked."""
        return fetch_all(
            self._conn,
            "allocation/capacity_gone",
            CapacityGone,
            {
                "multinode_types": list(multinode_types),
                "most_nodes": most_nodes,
                "patience_seconds": patience_seconds,
                "batch": batch,
            },
        )

    def queue(self) -> QueueColumns:
        """Reservations parked waiting for capacity, FIFO per GPU type."""
        return fetch_columns(self._conn, "allocation/queue", QueueColumns)

    def grant(self, slots: Sequence[SlotGrant], granted_at: datetime) -> dict[str, float]:
        """Allocate the slots and stamp their reservations granted at `granted_at` (the
        pass's time, from which the pass planned their ends), in one statement. Per granted
        reservation (its id as text), the seconds it waited since it was submitted, by the
        database's clock."""
        rows = self._conn.execute(
            query("allocation/grant"),
            {
                **column_arrays(slots, "node_name", "slot", "reservation_id", "rank"),
                "granted_at": granted_at,
            },
        ).fetchall()
        return dict(rows)

    def record_waits(self, waits: QueueWaits) -> int:
        """Queue positions and estimated starts, written only where they changed; the number
        of rows written. The columns go as binary arrays built in a few calls (db/arrays.py):
        a first pass sends one per waiting reservation."""
        with self._conn.cursor() as cursor:
            register_binary_arrays(cursor)
            cursor.execute(
                query("allocation/record_waits"),
                {
                    "reservation_ids": uuid_array(waits.reservation_ids),
                    "positions": int4_array(waits.positions),
                    "starts_at": timestamptz_array(waits.starts_at),
                },
            )
            return cursor.rowcount

    def record_type_waits(self, waits: Sequence[TypeWait]) -> None:
        """Each GPU type's wait for a new request; types not given get none."""
        self._conn.execute(
            query("allocation/record_type_waits"),
            column_arrays(waits, gpu_types="gpu_type", minutes="minutes"),
        )

    def unsignalled(self) -> list[UnsignalledGrant]:
        """Grants whose execution has not been told yet."""
        return fetch_all(self._conn, "allocation/unsignalled", UnsignalledGrant)

    def mark_signalled(self, reservation_ids: Sequence[UUID]) -> None:
        self._conn.execute(
            query("allocation/mark_signalled"), {"reservation_ids": list(reservation_ids)}
        )

    def release(self, reservation_id: UUID) -> int:
        """Give the reservation's slots back; the number of slots released."""
        row = self._conn.execute(
            query("allocation/release"), {"reservation_id": reservation_id}
        ).fetchone()
        assert row is not None  # a count, always
        return int(row[0])
