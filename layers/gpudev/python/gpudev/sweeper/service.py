"""One sweeper run: read the cluster, the live reservations and their executions in bulk,
plan (sweeper/plan.py), apply, record the run in `reconciler_runs`.

- One run at a time: a session advisory lock; a run that cannot take it records `skipped`
  and returns (the function also has reserved concurrency 1).
- Reads, in this order: one list per kind of labelled objects (pods, services, config maps,
  secrets, network policies) in each namespace reservations use, then the live rows (one
  statement, with when the objects' ended reservations ended), then the running executions
  (ListExecutions, paginated) and DescribeExecution only for live rows missing from that
  list. Objects are listed before rows are read, so a reservation created meanwhile is
  never taken for gone; the run's start (the database's clock, before the listing) tells
  a leftover from a tear down that ran while we looked (sweeper/plan.py).
- Writes: each end with its release in one transaction (allocation/release.sql: the
  allocator's own statement), deletes of objects as they were listed (a repair only if the
  delete removed a live object: gone already or changed since is not), create jobs through
  the jobs queue, then one allocator pass if any slots came back, so the next in queue gets
  them at once. SQL through repositories/sweeper.py; this module owns the transactions.
- Disks held by ended reservations whose execution died: one step each a run, after the
  ends and deletes (sweeper/disks.py), counted in `disks_waiting` / `disks_failed` /
  `disks_freed` (a repair).
- Pods of ended reservations stuck Terminating by the disk listing's finalizer past the
  listing patience, whose disk nothing holds any more: the finalizer removed, counted in
  `listings_released` (a repair; sweeper/listings.py).
- Requested changes the running execution never heard of (a cancel or change whose job
  dead-lettered): its parked execution woken through its token, as the jobs consumer
  would have, counted in `executions_woken` (a repair); a change wake is recorded in
  `change_wakes`, so it respects the change-wake bound like the consumer's.
- The outbox relay (gpudev/outbox.py): one batch of jobs the API did not send after its
  commit, sent and deleted, counted in `jobs_relayed` (a repair: the API's send failed).
- One failing delete or send is counted in `errors` and the run goes on; a failure to read
  fails the run (recorded `failed`, re-raised for the function's error alarm).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from gpudev.allocation.service import release_allocation
from gpudev.cluster.objects_client import KubernetesUnavailable, ReservationObjects
from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL
from gpudev.errors import Unavailable
from gpudev.jobs import CreateReservationJob, JobQueue
from gpudev.observability import logger
from gpudev.outbox import relay_outbox
from gpudev.repositories import ReconcilerRunsRepository, SweeperRepository
from gpudev.repositories.change_wakes import ChangeWakesRepository
from gpudev.repositories.sweeper import EndReservation
from gpudev.signals import Signals, Wake
from gpudev.sweeper.disks import DiskSaver, SaveStep
from gpudev.sweeper.listings import HeldPod, listings_to_release
from gpudev.sweeper.listings import release as release_listings
from gpudev.sweeper.plan import (
    EXECUTION_MISSING,
    ClusterObject,
    Limits,
    SweepPlan,
    WakeExecution,
    executions_to_describe,
    leftover_share_volumes,
    plan_sweep,
)

RECONCILER = "sweeper"
LOCK_KEY = 7_216_004_003
REPAIRS = (
    "reservations_ended",
    "objects_deleted",
    "create_jobs_resent",
    "jobs_relayed",
    "disks_freed",
    "listings_released",
    "executions_woken",
)


@dataclass
class SweepResult:
    outcome: str  # succeeded | skipped | failed
    statistics: dict[str, int] = field(default_factory=dict)
    run_id: int | None = None

    @property
    def repairs(self) -> int:
        return sum(self.statistics.get(name, 0) for name in REPAIRS)


@dataclass
class Sweeper:
    conn: psycopg.Connection[Any]  # autocommit: each statement or transaction commits
    objects: Sequence[ReservationObjects]  # one per namespace reservations use
    stepfunctions: Any
    jobs: JobQueue
    state_machine_arn: str
    limits: Limits
    allocate: Callable[[], Any]  # one allocator pass (the only writer of allocations)
    # One step of saving the disk of a reservation whose execution died (sweeper/disks.py)
    save_disk: SaveStep
    # Deletes the cluster-scoped PersistentVolumes labelled with a reservation (its personal
    # share's, whose claim was a leftover); how many. None: there are none to delete.
    delete_volumes: Callable[[str], int] | None = None
    # The reservations that have a personal share's PersistentVolume (cluster/volumes.py
    # share_reservations): one whose claim is already gone is deleted too. None: none.
    share_volumes: Callable[[], set[str]] | None = None

    @property
    def _rows(self) -> SweeperRepository:
        return SweeperRepository(self.conn)

    def run(self, invoked_by: str) -> SweepResult:
        runs = ReconcilerRunsRepository(self.conn)
        if not self._rows.try_lock(LOCK_KEY):
            run = runs.record(RECONCILER, invoked_by, "skipped", "another run is in progress")
            logger.info("sweeper skipped: another run is in progress")
            return SweepResult("skipped", run_id=run.run_id)
        try:
            run = runs.start(RECONCILER, invoked_by)
            statistics: dict[str, int] = {}
            try:
                statistics = self._sweep(run.started_at)
            except Exception as exc:
                runs.finish(run.run_id, "failed", statistics, f"{type(exc).__name__}: {exc}")
                raise
            runs.finish(run.run_id, "succeeded", statistics)
        finally:
            self._unlock()
        logger.info("sweeper finished", extra={"statistics": statistics})
        return SweepResult("succeeded", statistics, run.run_id)

    def _unlock(self) -> None:
        try:
            self._rows.unlock(LOCK_KEY)
        except psycopg.Error:  # a lost session has released the lock already
            logger.exception("sweeper could not release its lock")

    # -- reads -----------------------------------------------------------------------------
    def _cluster_objects(self) -> tuple[list[ClusterObject], list[HeldPod]]:
        """Every labelled object, and the pods among them held by the listing's finalizer."""
        listed, held = [], []
        for objects in self.objects:
            for kind in KINDS:
                for item in objects.labelled(kind):
                    listed.append(ClusterObject.from_item(kind, item, RESERVATION_LABEL))
                    if kind == "pods" and (pod := HeldPod.of(objects.namespace, item)):
                        held.append(pod)
        return listed, held

    def _running_executions(self) -> set[str]:
        paginator = self.stepfunctions.get_paginator("list_executions")
        return {
            execution["executionArn"]
            for page in paginator.paginate(
                stateMachineArn=self.state_machine_arn, statusFilter="RUNNING"
            )
            for execution in page["executions"]
        }

    def _describe(self, execution_arn: str) -> str:
        try:
            response = self.stepfunctions.describe_execution(executionArn=execution_arn)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ExecutionDoesNotExist":
                return EXECUTION_MISSING
            raise
        return str(response["status"])

    # -- the run ---------------------------------------------------------------------------
    def _sweep(self, started_at: datetime) -> dict[str, int]:
        """`started_at`: the run's start on the database's clock, before the listing."""
        objects, held_pods = self._cluster_objects()
        shares = self.share_volumes() if self.share_volumes and self.delete_volumes else set()
        rows = self._rows.rows(_reservation_ids(objects, shares))
        running = self._running_executions()
        candidates = executions_to_describe(rows.live, running)
        described = {arn: self._describe(arn) for arn in candidates}
        plan = plan_sweep(
            rows.live,
            described,
            objects,
            self.limits,
            listed_at=started_at,
            ended_at=rows.ended_at,
        )
        statistics = {
            "live_reservations": len(rows.live),
            "objects_seen": len(objects),
            "executions_described": len(described),
            "reservations_ended": 0,
            "slots_released": 0,
            "objects_deleted": 0,
            "objects_already_gone": 0,
            "create_jobs_resent": 0,
            "jobs_relayed": 0,
            "disks_none": 0,
            "disks_waiting": 0,
            "disks_failed": 0,
            "disks_freed": 0,
            "listings_released": 0,
            "executions_woken": 0,
            "errors": 0,
        }
        not_ended = self._end(plan.ends, statistics)
        self._delete(plan, not_ended, statistics)
        live_ids = (str(row.reservation_id) for row in rows.live)
        for reservation_id in leftover_share_volumes(
            shares, plan, live_ids, rows.ended_at, started_at, self.limits
        ):
            self._delete_share_volume(reservation_id, not_ended, statistics)
        DiskSaver(self._rows, self._describe, self.save_disk).run(running, described, statistics)
        holding = {str(disk.reservation_id) for disk in self._rows.held_disks()}
        live = {str(row.reservation_id) for row in rows.live}
        stuck = listings_to_release(
            held_pods, live, holding, rows.ended_at, started_at, self.limits
        )
        release_listings({o.namespace: o for o in self.objects}, stuck, statistics)
        self._wake(plan.wakes, statistics)
        self._resend(plan, statistics)
        self._relay(statistics)
        if statistics["slots_released"] or statistics["reservations_ended"]:
            self.allocate()
        return statistics

    def _end(self, ends: list[EndReservation], statistics: dict[str, int]) -> set[str]:
        """End each reservation and release its slots in one transaction; returns the ids
        whose row had moved on (nothing done)."""
        not_ended: set[str] = set()
        for end in ends:
            with self.conn.transaction():
                if not self._rows.end(end):
                    not_ended.add(str(end.reservation_id))
                    continue
                released = release_allocation(self.conn, end.reservation_id)
            statistics["reservations_ended"] += 1
            statistics["slots_released"] += released
            logger.warning(
                "sweeper ended a reservation",
                extra={
                    "reservation_id": str(end.reservation_id),
                    "status": str(end.status),
                    "reason": end.reason,
                },
            )
        return not_ended

    def _delete(self, plan: SweepPlan, not_ended: set[str], statistics: dict[str, int]) -> None:
        from kubernetes.client.exceptions import ApiException

        namespaces = {objects.namespace: objects for objects in self.objects}
        for delete in plan.deletes:
            if delete.reservation_id in not_ended:
                continue  # its row moved on while we looked: the next run judges it again
            try:
                removed = namespaces[delete.namespace].delete_listed(
                    delete.kind, delete.name, delete.uid, delete.resource_version
                )
            except (KubernetesUnavailable, ApiException) as exc:
                statistics["errors"] += 1
                logger.error(
                    "sweeper could not delete an object",
                    extra={"object": delete.__dict__, "error": str(exc)},
                )
                continue
            if not removed:  # gone already, or changed since listed: someone else acted
                statistics["objects_already_gone"] += 1
                continue
            statistics["objects_deleted"] += 1
            logger.warning("sweeper deleted a leftover object", extra={"object": delete.__dict__})
            if delete.kind == "persistentvolumeclaims" and self.delete_volumes is not None:
                # Its volume is cluster-scoped, so never listed with the namespaced objects
                # (a disk's is deleted when the disk is saved: lifecycle/disk.py).
                statistics["objects_deleted"] += self.delete_volumes(delete.reservation_id)

    def _delete_share_volume(
        self, reservation_id: str, not_ended: set[str], statistics: dict[str, int]
    ) -> None:
        """A personal share's PersistentVolume whose claim is gone (`Released`)."""
        from kubernetes.client.exceptions import ApiException

        assert self.delete_volumes is not None
        if reservation_id in not_ended:
            return  # its row moved on while we looked: the next run judges it again
        try:
            deleted = self.delete_volumes(reservation_id)
        except (KubernetesUnavailable, ApiException) as exc:
            statistics["errors"] += 1
            logger.error(
                "sweeper could not delete a share's volume",
                extra={"reservation_id": reservation_id, "error": str(exc)},
            )
            return
        statistics["objects_deleted"] += deleted
        logger.warning(
            "sweeper deleted a leftover share volume", extra={"reservation_id": reservation_id}
        )

    def _wake(self, wakes: list[WakeExecution], statistics: dict[str, int]) -> None:
        """Deliver the cancels and changes whose jobs were never delivered. A closed token
        (the execution moved on since the read) is not a repair: its next step reads the
        row."""
        signals = Signals(self.stepfunctions)
        for wake in wakes:
            try:
                delivered = signals.wake(wake.task_token, Wake(outcome=wake.outcome))
            except (BotoCoreError, ClientError) as exc:
                statistics["errors"] += 1
                logger.error(
                    "sweeper could not wake an execution",
                    extra={"reservation_id": str(wake.reservation_id), "error": str(exc)},
                )
                continue
            if not delivered:
                continue
            if wake.outcome == "changed":
                ChangeWakesRepository(self.conn).record(wake.reservation_id)
            statistics["executions_woken"] += 1
            logger.warning(
                "sweeper woke an execution for a request its job never delivered",
                extra={"reservation_id": str(wake.reservation_id), "outcome": wake.outcome},
            )

    def _relay(self, statistics: dict[str, int]) -> None:
        """Send the outbox rows the API did not send after its commit (one batch a run)."""
        relayed = relay_outbox(self.conn, self.jobs, self.limits.outbox_after_seconds)
        statistics["jobs_relayed"] = relayed.sent
        statistics["errors"] += relayed.refused

    def _resend(self, plan: SweepPlan, statistics: dict[str, int]) -> None:
        sent: list[UUID] = []
        for resend in plan.resends:
            job = CreateReservationJob(reservation_id=resend.reservation_id, user_id=resend.user_id)
            try:
                self.jobs.send(job)
            except (Unavailable, BotoCoreError, ClientError):
                statistics["errors"] += 1
                continue
            sent.append(resend.reservation_id)
            logger.warning(
                "sweeper sent a create job again",
                extra={"reservation_id": str(resend.reservation_id)},
            )
        if sent:
            self._rows.record_resends(sent)
        statistics["create_jobs_resent"] = len(sent)


def _reservation_ids(objects: Sequence[ClusterObject], more: Iterable[str] = ()) -> list[UUID]:
    """The reservations the objects (and `more`) are labelled with (a label that is no id
    names none)."""
    ids = set()
    for reservation_id in [item.reservation_id for item in objects] + sorted(more):
        try:
            ids.add(UUID(reservation_id))
        except ValueError:
            continue
    return sorted(ids)
