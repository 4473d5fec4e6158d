"""One allocator pass: read the cluster once, then under a transaction-scoped advisory lock
sync the nodes, decide (plan.py), write the grants and the positions and estimated starts
of the waiting reservations whose position or start changed; after commit, tell each granted
execution through its task token.

The pass reads and writes through rows.py (estimated starts are moments, written only
when the plan moved them). A new request's wait per GPU type stays in clock minutes
(`gpu_types.estimated_wait_minutes`: one row per type).

A grant is written before it is signalled. A send that fails for a transient reason is
logged and retried by the next pass (grant_signalled_at is still NULL), and never stops the
other grants' sends nor fails the pass (which may run inside another reservation's task); a
send to a token whose execution is gone releases the allocation, so capacity is never lost
to a dead execution. A closed token whose execution still runs counts as told: the
execution's next park finds the grant and wakes itself (lifecycle/tasks.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.allocation.capacity_gone import Ended, end_capacity_gone
from gpudev.allocation.memo import PlanMemo
from gpudev.allocation.plan import eta_minutes, plan
from gpudev.allocation.rows import (
    changed_waits,
    holding,
    node_rows,
    outside_allocations,
    released_pod_holdings,
    requests,
    whole_microseconds,
)
from gpudev.allocation.values import Decisions, NodeCapacity
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.models import ReservationStatus
from gpudev.observability import logger
from gpudev.repositories import AllocationsRepository, ReservationsRepository
from gpudev.repositories.allocations import NodeState, QueueColumns, SlotGrant, TypeWait
from gpudev.settings import LifecycleSettings
from gpudev.signals import Signals, Wake

# The plans of this execution environment's passes: a warm environment's next pass reuses a
# GPU type's plan when nothing it depends on changed (memo.py).
PLANS = PlanMemo()
# How long the probe for a new request's wait lasts: the CLI's default duration (it matters
# only to backfill: a shorter probe would start sooner behind a blocked head).
NEXT_REQUEST_HOURS = 8.0


@dataclass
class AllocatorReport:
    nodes: int = 0
    queued: int = 0
    granted: list[UUID] = field(default_factory=list)
    # how long each granted reservation waited since it was submitted (the dashboard's wait)
    granted_waits: list[float] = field(default_factory=list)
    signalled: int = 0
    released_dead: int = 0
    signal_failures: int = 0  # sends that failed for a transient reason: retried next pass
    waits_written: int = 0  # waiting reservations whose position or estimated start changed
    # waiting reservations ended because their type's node groups can no longer hold them
    capacity_gone: list[UUID] = field(default_factory=list)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a pass, back on after (unless it was off).

    A pass at scale allocates about a million objects that live until it ends (the queue's
    rows, the planner's requests and waits) and form no cycle: reference counting frees them.
    With the default thresholds the collector still ran every 700 allocations and, as the
    heap grew, full collections over all of them (0.2-0.5 s of a 100,000-queued pass); a
    request's `list(map(...))` of 100,000 took 80 ms instead of 32. Paused, what a pass
    leaves behind is collected by the first collection after it. Process-wide: a thread
    running meanwhile is only spared collections for that long."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def release_allocation(conn: psycopg.Connection[Any], reservation_id: UUID) -> int:
    """Give a reservation's slots back, in the caller's transaction: how tear down asks the
    allocator, the only writer of allocations. The number of slots released."""
    return AllocationsRepository(conn).release(reservation_id)


class Allocator:
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        signals: Signals,
        settings: LifecycleSettings,
        clock: Callable[[], float] = time.time,
        memo: PlanMemo = PLANS,
    ):
        self._conn = conn
        self._allocations = AllocationsRepository(conn)
        self._signals = signals
        self._settings = settings
        self._clock = clock  # epoch seconds
        self._memo = memo

    def run(self, nodes: list[Node], pods: list[Pod], cpu_types: set[str]) -> AllocatorReport:
        report = AllocatorReport()
        rows, live_pods = node_rows(nodes, pods, cpu_types)
        with collector_paused(), self._conn.transaction():
            self._allocations.lock()
            # The pass's time, read once it holds the lock (a pass may wait there for another):
            # grants are stamped with it, so a grant never predates what it grants.
            now = whole_microseconds(self._clock())
            gone = end_capacity_gone(self._conn, self._settings.seconds_per_hour)
            self._allocations.sync_nodes(rows)
            capacity, holdings = [], []
            for n in self._allocations.nodes():
                if not n.schedulable:
                    continue
                outside = outside_allocations(live_pods.get(n.node_name, []), set(n.holders))
                used_outside = sum(p.gpu_requests for p in outside)
                capacity.append(
                    NodeCapacity(
                        n.node_name,
                        n.gpu_type,
                        n.slots,
                        () if n.held_by_profiling else self._free_slots(n, used_outside),
                        n.profiling,
                        n.fabric,
                    )
                )
                holdings += released_pod_holdings(n.node_name, outside, now)
            holdings += [holding(h, self._settings) for h in self._allocations.holdings()]
            waiting = self._allocations.queue()
            queue = requests(waiting, self._settings)
            probe_seconds = NEXT_REQUEST_HOURS * self._settings.seconds_per_hour
            decisions = plan(
                capacity,
                holdings,
                queue,
                now,
                probe_seconds,
                allowance_seconds=self._settings.ready_timeout_seconds,
                memo=self._memo,
                # the cluster's profiling nodes, cordoned ones too: their type's profiling
                # reservations wait for them rather than go elsewhere
                profiling_types={row.gpu_type for row in rows if row.profiling},
            )
            waited, report.waits_written = self._write(decisions, waiting, now)
        report.nodes, report.queued = len(capacity), len(queue)
        report.granted = [UUID(g.reservation_id) for g in decisions.grants]
        report.granted_waits = [waited[g.reservation_id] for g in decisions.grants]
        self._wake_ended(gone, report)
        self._signal(report)
        return report

    def _wake_ended(self, ended: list[Ended], report: AllocatorReport) -> None:
        """Tell the executions of the reservations this pass ended: their tear down keeps
        the ending. A closed token or a failed send changes nothing for the user (the row
        is ended and holds no capacity); an execution not woken stays parked until its
        queue timeout, then tears down and keeps the ending."""
        for gone in ended:
            report.capacity_gone.append(UUID(gone.reservation_id))
            logger.warning(
                "ended a waiting reservation its type can no longer hold",
                extra={"reservation_id": gone.reservation_id, "reason": gone.reason},
            )
            try:
                self._signals.wake(gone.task_token, Wake(outcome="cancel"))
            except Exception:
                logger.warning(
                    "could not wake an ended reservation's execution",
                    extra={"reservation_id": gone.reservation_id},
                    exc_info=True,
                )

    @staticmethod
    def _free_slots(node: NodeState, used_by_others: int) -> tuple[int, ...]:
        allocated = set(node.allocated)
        free = [s for s in range(node.slots) if s not in allocated]
        usable = max(0, len(free) - used_by_others)
        return tuple(free[:usable])

    def _write(
        self, decisions: Decisions, waiting: QueueColumns, now: float
    ) -> tuple[dict[str, float], int]:
        """Grants and waits; per grant the seconds it waited, and the number of waits written."""
        waited = self._allocations.grant(
            [
                SlotGrant(node, slot, grant.reservation_id, rank)
                for grant in decisions.grants
                for rank, (node, slots) in enumerate(grant.placements)
                for slot in slots
            ],
            granted_at=datetime.fromtimestamp(now, UTC),
        )
        written = self._allocations.record_waits(changed_waits(decisions, waiting, now))
        self._allocations.record_type_waits(
            [
                TypeWait(gpu_type, eta_minutes(eta, self._settings.seconds_per_hour))
                for gpu_type, eta in decisions.next_request_waits.items()
            ]
        )
        return waited, written

    def _signal(self, report: AllocatorReport) -> None:
        delivered: list[UUID] = []
        for row in self._allocations.unsignalled():
            try:
                told = self._signals.wake(row.task_token, Wake(outcome="granted"))
                running = told or self._signals.execution_running(row.execution_arn)
            except Exception:  # throttled, unreachable: one grant never stops the others
                report.signal_failures += 1
                logger.warning(
                    "could not signal a grant; the next pass retries",
                    extra={"reservation_id": str(row.reservation_id)},
                    exc_info=True,
                )
                continue
            if told:
                delivered.append(row.reservation_id)
            elif not running:
                with self._conn.transaction():
                    self._allocations.release(row.reservation_id)
                    ReservationsRepository(self._conn).set_status(
                        row.reservation_id,
                        ReservationStatus.FAILED,
                        "its Step Functions execution ended before it started",
                    )
                report.released_dead += 1
                logger.warning(
                    "released a grant whose execution is gone",
                    extra={"reservation_id": str(row.reservation_id)},
                )
            else:
                delivered.append(row.reservation_id)  # it was told already
        if delivered:
            self._allocations.mark_signalled(delivered)
        report.signalled = len(delivered)
