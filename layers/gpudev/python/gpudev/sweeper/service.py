"""One sweeper run: read the cluster, the live reservations and their executions in bulk,
plan (sweeper/plan.py), apply, record the run in `reconciler_runs`.

- One run at a time: a session advisory lock; a run that cannot take it records `skipped`
  and returns (the function also has reserved concurrency 1).
- Reads, in this order: one list per kind of labelled objects (pods, services, config maps,
  secrets, network policies) in each namespace reservations use, then the live rows (one
  statement), then the running executions (ListExecutions, paginated) and DescribeExecution
  only for live rows missing from that list. Objects are listed before rows are read, so a
  reservation created meanwhile is never taken for gone.
- Writes: each end with its release in one transaction (allocation/release.sql: the
  allocator's own statement), deletes by name, create jobs through the jobs queue, then one
  allocator pass if any slots came back, so the next in queue gets them at once.
- The outbox relay (gpudev/outbox.py): one batch of jobs the API did not send after its
  commit, sent and deleted, counted in `jobs_relayed` (a repair: the API's send failed).
- One failing delete or send is counted in `errors` and the run goes on; a failure to read
  fails the run (recorded `failed`, re-raised for the function's error alarm).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from botocore.exceptions import BotoCoreError, ClientError
from psycopg.rows import class_row

from gpudev.cluster.objects_client import KubernetesUnavailable, ReservationObjects
from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL
from gpudev.db.queries import query
from gpudev.errors import Unavailable
from gpudev.jobs import CreateReservationJob, JobQueue
from gpudev.observability import logger
from gpudev.outbox import relay_outbox
from gpudev.repositories import ReconcilerRunsRepository
from gpudev.sweeper.plan import (
    EXECUTION_MISSING,
    ClusterObject,
    EndReservation,
    Limits,
    LiveRow,
    SweepPlan,
    executions_to_describe,
    plan_sweep,
)

RECONCILER = "sweeper"
LOCK_KEY = 7_216_004_003
REPAIRS = ("reservations_ended", "objects_deleted", "create_jobs_resent", "jobs_relayed")


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

    def run(self, invoked_by: str) -> SweepResult:
        runs = ReconcilerRunsRepository(self.conn)
        locked = self.conn.execute(query("sweeper/try_lock"), {"key": LOCK_KEY}).fetchone()
        if not locked or not locked[0]:
            run = runs.record(RECONCILER, invoked_by, "skipped", "another run is in progress")
            logger.info("sweeper skipped: another run is in progress")
            return SweepResult("skipped", run_id=run.run_id)
        try:
            run = runs.start(RECONCILER, invoked_by)
            statistics: dict[str, int] = {}
            try:
                statistics = self._sweep()
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
            self.conn.execute(query("sweeper/unlock"), {"key": LOCK_KEY})
        except psycopg.Error:  # a lost session has released the lock already
            logger.exception("sweeper could not release its lock")

    # -- reads -----------------------------------------------------------------------------
    def _cluster_objects(self) -> list[ClusterObject]:
        return [
            ClusterObject.from_item(kind, item, RESERVATION_LABEL)
            for objects in self.objects
            for kind in KINDS
            for item in objects.labelled(kind)
        ]

    def _live_rows(self) -> list[LiveRow]:
        with self.conn.cursor(row_factory=class_row(LiveRow)) as cur:
            return cur.execute(query("sweeper/live")).fetchall()

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
    def _sweep(self) -> dict[str, int]:
        objects = self._cluster_objects()
        rows = self._live_rows()
        candidates = executions_to_describe(rows, self._running_executions())
        described = {arn: self._describe(arn) for arn in candidates}
        plan = plan_sweep(rows, described, objects, self.limits)
        statistics = {
            "live_reservations": len(rows),
            "objects_seen": len(objects),
            "executions_described": len(described),
            "reservations_ended": 0,
            "slots_released": 0,
            "objects_deleted": 0,
            "create_jobs_resent": 0,
            "jobs_relayed": 0,
            "errors": 0,
        }
        not_ended = self._end(plan.ends, statistics)
        self._delete(plan, not_ended, statistics)
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
                ended = self.conn.execute(
                    query("sweeper/end"),
                    {
                        "reservation_id": end.reservation_id,
                        "execution_arn": end.execution_arn,
                        "status": str(end.status),
                        "detail": end.reason,
                    },
                ).fetchone()
                if ended is None:
                    not_ended.add(str(end.reservation_id))
                    continue
                released = self.conn.execute(
                    query("allocation/release"), {"reservation_id": end.reservation_id}
                ).fetchone()
            statistics["reservations_ended"] += 1
            statistics["slots_released"] += released[0] if released else 0
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
                namespaces[delete.namespace].delete(delete.kind, delete.name)
            except (KubernetesUnavailable, ApiException) as exc:
                statistics["errors"] += 1
                logger.error(
                    "sweeper could not delete an object",
                    extra={"object": delete.__dict__, "error": str(exc)},
                )
                continue
            statistics["objects_deleted"] += 1
            logger.warning("sweeper deleted a leftover object", extra={"object": delete.__dict__})

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
            self.conn.execute(query("sweeper/record_resends"), {"reservation_ids": sent})
        statistics["create_jobs_resent"] = len(sent)
