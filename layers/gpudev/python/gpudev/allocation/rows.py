"""The pass's reading and writing (service.py): the cluster and the database's rows turned
into the planner's values (values.py), and back into the waits worth writing.

An estimated start is a moment (now + the plan's ETA), so it holds still while time passes
and a pass writes only what the plan moved; readers turn it into clock minutes from their own
now (`reservations/schemas.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from gpudev.allocation.values import Decisions, Holding, Request, expected_end
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.repositories.allocations import HeldSlots, QueueColumns, QueueWaits, SeenNode
from gpudev.settings import LifecycleSettings

CPU_SLOTS_PER_NODE = 3
RELEASED_POD_GRACE_SECONDS = 30.0  # Kubernetes' default terminationGracePeriodSeconds
LIVE_PHASES = ("Pending", "Running")


def node_rows(
    nodes: list[Node], pods: list[Pod], cpu_types: set[str]
) -> tuple[list[SeenNode], dict[str, list[Pod]]]:
    """Node rows for the database, and per node the live pods on it."""
    live: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.node_name and pod.phase in LIVE_PHASES:
            live.setdefault(pod.node_name, []).append(pod)
    rows = []
    for node in nodes:
        if not node.gpu_type:
            continue
        cpu = node.gpu_type in cpu_types
        rows.append(
            SeenNode(
                name=node.name,
                gpu_type=node.gpu_type,
                slots=CPU_SLOTS_PER_NODE if cpu else node.allocatable_gpus,
                schedulable=node.schedulable and not node.tainted,
                node_ip=node.internal_ip,
                external_address=node.external_address,
                profiling=node.profiling,
                fabric=node.fabric,
            )
        )
    return rows, live


def outside_allocations(pods: list[Pod], holders: set[str]) -> list[Pod]:
    """Live pods on a node that use GPUs without an allocation there: other workloads' pods,
    and pods of reservations that no longer hold the node (a released reservation's pod is
    Terminating for its grace period, and the kubelet refuses a new pod until it is gone)."""
    return [p for p in pods if p.reservation_id not in holders and p.gpu_requests]


def released_pod_holdings(node: str, pods: list[Pod], now: float) -> list[Holding]:
    """GPUs of a released reservation's pods come back when the pods are gone: by their
    deletion deadline, or within a grace period if not deleted yet. (Other workloads' pods
    have no known end, so they are not holdings: their GPUs are simply not free.)"""
    return [
        Holding(node, p.gpu_requests, p.terminating_until or now + RELEASED_POD_GRACE_SECONDS)
        for p in pods
        if p.reservation_id is not None
    ]


def requests(waiting: QueueColumns, settings: LifecycleSettings) -> list[Request]:
    """The queue as the planner's requests, in the same order."""
    per_node = [
        1 if gpus == 0 else gpus // nodes
        for gpus, nodes in zip(waiting.gpu_counts, waiting.total_nodes, strict=True)
    ]
    durations = [hours * settings.seconds_per_hour for hours in waiting.duration_hours]
    return list(
        map(
            Request,
            waiting.reservation_ids,
            waiting.gpu_types,
            per_node,
            waiting.total_nodes,
            durations,
            waiting.profiling,
            waiting.parked,
        )
    )


def holding(row: HeldSlots, settings: LifecycleSettings) -> Holding:
    if row.expires_at is not None:
        ends = row.expires_at.timestamp()
    else:  # granted, not active yet: the end the pass that granted it planned
        ends = expected_end(
            row.granted_at.timestamp(),
            row.duration_hours * settings.seconds_per_hour,
            settings.ready_timeout_seconds,
        )
    return Holding(row.node_name, row.slots, ends)


def whole_microseconds(epoch_seconds: float) -> float:
    """The moment as PostgreSQL stores it (a timestamptz has microseconds), so that a time
    the pass plans from (its now, a grant's time) reads back as the same number."""
    return datetime.fromtimestamp(epoch_seconds, UTC).timestamp()


def changed_waits(decisions: Decisions, waiting: QueueColumns, now: float) -> QueueWaits:
    """The waits whose position or estimated start differs from what the queue read returned
    (the previous pass's): only these are sent. ETAs are in real seconds (durations are
    `duration_hours * seconds_per_hour`), so the start is `now + eta` under any clock. Many
    waits share an ETA (the end time they wait for), so each start is made once, as the
    moment to write and as the epoch seconds the queue read gives for a recorded one (a
    timestamptz's microseconds / 1e6 correctly rounded: the moment's `timestamp()`)."""
    row = dict(zip(waiting.reservation_ids, range(len(waiting.reservation_ids)), strict=True))
    positions, starts = waiting.queue_positions, waiting.estimated_starts
    waits = decisions.waits
    moments: dict[float | None, datetime | None] = {None: None}
    epochs: dict[float | None, float | None] = {None: None}
    for eta in {wait[2] for wait in waits}:
        if eta is not None:
            moment = moments[eta] = datetime.fromtimestamp(now + eta, UTC)
            epochs[eta] = moment.timestamp()
    # (a loop of 100,000 at scale: plain indexing and comprehensions, no tuple per wait)
    changed = [
        wait
        for wait in waits
        if (i := row.get(wait[0])) is None
        or positions[i] != wait[1]
        or starts[i] != epochs[wait[2]]
    ]
    return QueueWaits(
        [wait[0] for wait in changed],
        [wait[1] for wait in changed],
        [moments[wait[2]] for wait in changed],
    )
