"""Runs the disk reconciliation: reads EBS (volumes and snapshots in bulk, paginated), plans
(disks/plan.py), applies set-based, and records the run.

- One run at a time: a transaction-scoped advisory lock; a run that cannot take it returns
  at once as skipped (the CronJob's `concurrencyPolicy: Forbid`).
- Listing volumes fails → nothing changes. Listing snapshots fails → snapshot fields stay.
- Each kind of change is one statement; if one row breaks a constraint, that batch is
  retried row by row under savepoints so only that volume is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from gpudev.disks.ebs import list_gpudev_snapshots, list_gpudev_volumes
from gpudev.disks.plan import Duplicate, Plan, plan_reconciliation, summarize_snapshots
from gpudev.observability import logger
from gpudev.repositories import DiskReconciliationRepository, ReconcilerRunsRepository

RECONCILER = "disk_reconciliation"
T = TypeVar("T")


@dataclass
class DiskReconciliation:
    outcome: str  # succeeded | skipped | failed
    statistics: dict[str, int] = field(default_factory=dict)
    duplicates: list[Duplicate] = field(default_factory=list)
    run_id: int | None = None


def _apply_batch(
    conn: psycopg.Connection[Any],
    apply: Callable[[Sequence[T]], None],
    items: Sequence[T],
) -> int:
    """Apply `items` in one statement; on a constraint violation, row by row. Returns failures."""
    if not items:
        return 0
    try:
        with conn.transaction():
            apply(items)
        return 0
    except psycopg.errors.IntegrityError:
        failures = 0
        for item in items:
            try:
                with conn.transaction():
                    apply([item])
            except psycopg.errors.IntegrityError as exc:
                failures += 1
                logger.error(
                    "disk reconciliation change rolled back",
                    extra={"change": repr(item), "error": str(exc)},
                )
        return failures


def apply_plan(conn: psycopg.Connection[Any], plan: Plan) -> dict[str, int]:
    disks = DiskReconciliationRepository(conn)
    stats = dict(plan.statistics)
    failed_imports = _apply_batch(conn, disks.import_disks, plan.imports)
    failed_syncs = _apply_batch(conn, disks.sync, plan.syncs)
    stats["created"] -= failed_imports
    stats["updated"] -= failed_syncs
    stats["errors"] += failed_imports + failed_syncs
    return stats


def reconcile_disks(conn: psycopg.Connection[Any], ec2: Any, invoked_by: str) -> DiskReconciliation:
    runs = ReconcilerRunsRepository(conn)
    disks = DiskReconciliationRepository(conn)
    try:
        with conn.transaction():
            if not disks.try_lock():
                run = runs.record(RECONCILER, invoked_by, "skipped", "another run is in progress")
                logger.info("disk reconciliation skipped: another run is in progress")
                return DiskReconciliation("skipped", run_id=run.run_id)
            run = runs.start(RECONCILER, invoked_by)
            volumes = list_gpudev_volumes(ec2)  # a failure here aborts: nothing is changed
            try:
                snapshots = summarize_snapshots(list_gpudev_snapshots(ec2))
            except (BotoCoreError, ClientError):
                logger.exception("snapshot listing failed: snapshot fields left unchanged")
                snapshots = None
            plan = plan_reconciliation(volumes, snapshots, disks.rows())
            statistics = apply_plan(conn, plan)
            for duplicate in plan.duplicates:
                logger.warning(
                    "several volumes for one disk: manual action needed",
                    extra={"duplicate": duplicate.__dict__},
                )
            runs.finish(run.run_id, "succeeded", statistics)
    except Exception as exc:
        with conn.transaction():
            runs.record(RECONCILER, invoked_by, "failed", f"{type(exc).__name__}: {exc}")
        raise
    logger.info("disk reconciliation finished", extra={"statistics": statistics})
    return DiskReconciliation("succeeded", statistics, plan.duplicates, run.run_id)
