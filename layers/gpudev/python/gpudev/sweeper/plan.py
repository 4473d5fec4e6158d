"""What the sweeper should repair, decided without I/O (gpudev/sweeper/service.py reads the
world and applies it).

What the lifecycle can leave behind when something outside it fails:

- a live reservation whose Step Functions execution is no longer RUNNING (stopped by an
  operator, `TearDownFailed`, lost with moto's memory): end it `failed` with a reason, give
  its slots back, and delete its objects;
- cluster objects labelled with a reservation that ended a while before they were listed, or
  that does not exist: delete them. A reservation that ended after that (its tear down ran
  while the sweeper looked) is its own lifecycle's to clean, and the next run judges it;
- a disk still held by a reservation that has ended, whose execution is no longer RUNNING
  (it died before `Free the disk`): save and free it (`disks_to_save`, sweeper/disks.py);
- a `pending` reservation that no execution took (its create job was lost, or sits in the
  dead-letter queue): send its create job again, up to a limit, then end it with a reason
  (`cancelled` if its owner asked for that meanwhile);
- a requested change the running execution never heard of (its cancel or change job
  dead-lettered): a cancel asked `requested_after_seconds` ago, or a change not applied and
  outside the change-wake bound (lifecycle/wakes.py), wakes the parked execution through
  its stored token, as the jobs consumer would have (`wakes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from gpudev.cluster.home_listing import LISTING_PATIENCE
from gpudev.lifecycle.wakes import coalesced
from gpudev.models import ReservationStatus
from gpudev.repositories.sweeper import WITH_EXECUTION, EndReservation, HeldDisk, LiveRow

# Execution statuses in which the execution still owns its reservation.
EXECUTION_ALIVE = frozenset({"RUNNING", "PENDING_REDRIVE"})
EXECUTION_MISSING = "NOT_FOUND"  # DescribeExecution: ExecutionDoesNotExist


@dataclass(frozen=True)
class ClusterObject:
    kind: str  # pods, services, configmaps, secrets
    name: str
    reservation_id: str  # the label's value, as found
    terminating: bool = False  # deletion already under way
    namespace: str = "gpu-dev"
    # As listed: the delete's preconditions, so an object that changed since (a tear down
    # made the pod Terminating, deleted and made again) is not deleted or counted.
    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def from_item(cls, kind: str, item: dict[str, Any], label: str) -> ClusterObject:
        metadata = item["metadata"]
        return cls(
            kind,
            metadata["name"],
            (metadata.get("labels") or {}).get(label, ""),
            metadata.get("deletionTimestamp") is not None,
            metadata.get("namespace", "gpu-dev"),
            metadata.get("uid"),
            metadata.get("resourceVersion"),
        )


@dataclass(frozen=True)
class Limits:
    pending_after_seconds: float
    max_create_resends: int
    outbox_after_seconds: float = 10.0  # an outbox row this old was not sent by the API
    # Objects of a reservation are deleted only if it ended this long before the listing
    # began: its tear down has finished (sweeper/plan.py `leftover`).
    ended_margin_seconds: float = 60.0
    # A pod of an ended reservation still held by the disk listing's finalizer this long
    # after its deletion began is let go (sweeper/listings.py).
    listing_patience_seconds: float = LISTING_PATIENCE.total_seconds()
    # A cancel asked this long ago on a row whose execution still runs was not heard (its
    # job dead-lettered or was lost): the sweeper wakes the execution itself.
    requested_after_seconds: float = 120.0
    # The change-wake bound (LifecycleSettings.change_wake_minutes, in seconds on the
    # lifecycle's clock, as the jobs consumer has it): a change is woken by the sweeper
    # only outside it.
    change_wake_bound_seconds: float = 180.0


@dataclass(frozen=True)
class ResendCreate:
    reservation_id: UUID
    user_id: str


@dataclass(frozen=True)
class DeleteObject:
    kind: str
    name: str
    reservation_id: str
    namespace: str = "gpu-dev"
    uid: str | None = None
    resource_version: str | None = None


@dataclass(frozen=True)
class WakeExecution:
    """A parked execution to wake through its token: the cancel or change its job should
    have delivered (idempotent: a token already woken is closed, and the execution reads
    the committed row whatever woke it)."""

    reservation_id: UUID
    task_token: str = field(repr=False)
    outcome: Literal["cancel", "changed"]


@dataclass
class SweepPlan:
    ends: list[EndReservation] = field(default_factory=list)
    deletes: list[DeleteObject] = field(default_factory=list)
    resends: list[ResendCreate] = field(default_factory=list)
    wakes: list[WakeExecution] = field(default_factory=list)


def executions_to_describe(rows: Iterable[LiveRow], running: set[str]) -> list[str]:
    """Executions of live rows that the (eventually consistent) running list did not show:
    only these are described, one by one, to confirm."""
    return sorted(
        {
            row.execution_arn
            for row in rows
            if row.status in WITH_EXECUTION
            and row.execution_arn
            and row.execution_arn not in running
        }
    )


def held_executions_to_describe(
    held: Iterable[HeldDisk], running: set[str], described: Mapping[str, str]
) -> list[str]:
    """Executions of disk holders that the running list did not show and that this run has
    not described yet."""
    return sorted(
        {
            disk.execution_arn
            for disk in held
            if disk.execution_arn
            and disk.execution_arn not in running
            and disk.execution_arn not in described
        }
    )


def disks_to_save(
    held: Iterable[HeldDisk], running: set[str], described: Mapping[str, str]
) -> list[UUID]:
    """The holders whose execution is confirmed not alive (described, or never had one):
    nothing else will save their disks. An execution in the running list, or not described
    (a failed describe), is left to run."""
    saving = []
    for disk in held:
        arn = disk.execution_arn
        if arn is None or (
            arn not in running and described.get(arn, "RUNNING") not in EXECUTION_ALIVE
        ):
            saving.append(disk.reservation_id)
    return saving


def dead_execution_reason(status: str) -> str:
    shown = "not found" if status == EXECUTION_MISSING else status
    return f"its execution ended ({shown}) without tearing down; cleaned up by the sweeper"


def _stuck_pending(row: LiveRow, limits: Limits) -> bool:
    if row.status != ReservationStatus.PENDING or row.execution_arn is not None:
        return False
    since = row.create_job_resent_at or row.created_at
    return (row.read_at - since).total_seconds() >= limits.pending_after_seconds


def unheard_request(row: LiveRow, limits: Limits) -> WakeExecution | None:
    """The wake a row's requested change still needs, if its execution is parked on a
    token (one between steps reads the row at its next step): a cancel asked at least
    `requested_after_seconds` ago, or a change not yet applied by an active execution and
    not within the change-wake bound (lifecycle/wakes.py: the checkpoint due by its end
    applies it)."""
    if row.status not in WITH_EXECUTION or row.task_token is None:
        return None
    if row.cancel_requested_at is not None:
        age = (row.read_at - row.cancel_requested_at).total_seconds()
        if age >= limits.requested_after_seconds:
            return WakeExecution(row.reservation_id, row.task_token, "cancel")
        return None
    if (
        row.status == ReservationStatus.ACTIVE
        and row.change_generation > row.applied_generation
        and not coalesced(row.change_woken_seconds, limits.change_wake_bound_seconds)
    ):
        return WakeExecution(row.reservation_id, row.task_token, "changed")
    return None


def leftover(
    reservation_id: str,
    ended_at: Mapping[str, datetime],
    listed_at: datetime,
    limits: Limits,
) -> bool:
    """An object of a reservation that is not live: a leftover if the reservation does not
    exist, or ended at least the margin before the listing began. One that ended later was
    being torn down while we listed (its objects seen, then deleted by its execution, then
    its row ended): not ours to delete nor to count as a repair."""
    ended = ended_at.get(reservation_id)
    return ended is None or ended <= listed_at - timedelta(seconds=limits.ended_margin_seconds)


def plan_sweep(
    rows: Iterable[LiveRow],
    described: dict[str, str],
    objects: Iterable[ClusterObject],
    limits: Limits,
    *,
    listed_at: datetime,
    ended_at: Mapping[str, datetime] | None = None,
) -> SweepPlan:
    """`rows`: every live reservation, read after `objects` were listed (so an object of a
    reservation missing from `rows` belongs to one that ended, or never existed);
    `described`: execution ARN → status for what `executions_to_describe` named;
    `listed_at`: the database's clock before the listing began; `ended_at`: reservation id →
    `reservation_ended` for the objects' reservations that have ended (read with `rows`)."""
    plan = SweepPlan()
    rows = list(rows)
    for row in rows:
        status = described.get(row.execution_arn or "")
        if row.status in WITH_EXECUTION and status and status not in EXECUTION_ALIVE:
            plan.ends.append(
                EndReservation(
                    row.reservation_id,
                    row.execution_arn,
                    ReservationStatus.FAILED,
                    dead_execution_reason(status),
                )
            )
        elif _stuck_pending(row, limits):
            if row.cancel_requested_at is not None:
                plan.ends.append(
                    EndReservation(
                        row.reservation_id,
                        None,
                        ReservationStatus.CANCELLED,
                        "cancelled by the user before it started",
                    )
                )
            elif row.create_job_resends >= limits.max_create_resends:
                plan.ends.append(
                    EndReservation(
                        row.reservation_id,
                        None,
                        ReservationStatus.FAILED,
                        "it never started: no execution took it after its create job was "
                        f"sent {row.create_job_resends + 1} times; ended by the sweeper",
                    )
                )
            else:
                plan.resends.append(ResendCreate(row.reservation_id, row.user_id))
        elif wake := unheard_request(row, limits):
            plan.wakes.append(wake)
    ending = {str(end.reservation_id) for end in plan.ends}
    live = {str(row.reservation_id) for row in rows} - ending
    ended_at = ended_at or {}
    plan.deletes = [
        DeleteObject(o.kind, o.name, o.reservation_id, o.namespace, o.uid, o.resource_version)
        for o in objects
        if not o.terminating
        and o.reservation_id not in live
        and (o.reservation_id in ending or leftover(o.reservation_id, ended_at, listed_at, limits))
    ]
    return plan


def leftover_share_volumes(
    volume_reservations: Iterable[str],
    plan: SweepPlan,
    live: Iterable[str],
    ended_at: Mapping[str, datetime],
    listed_at: datetime,
    limits: Limits,
) -> list[str]:
    """The reservations whose personal share's PersistentVolume (cluster-scoped, so not
    among the namespaced objects) outlived its claim: not live, ended before the margin or
    never existed, and with no claim of theirs being deleted this run (whose volume goes
    with it). A `Released` volume whose claim is already gone is found only here."""
    going = {d.reservation_id for d in plan.deletes if d.kind == "persistentvolumeclaims"}
    keep = set(live) - {str(end.reservation_id) for end in plan.ends}
    return sorted(
        r
        for r in set(volume_reservations)
        if r not in keep and r not in going and leftover(r, ended_at, listed_at, limits)
    )
