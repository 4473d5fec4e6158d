"""Disk jobs (create, delete, rename, restore, clone) as the jobs consumer runs them.

Jobs come through the outbox, so they arrive after their request committed, perhaps twice
and perhaps after a newer request on the same disk. The service acts on the committed row,
never on the job: the job's operation id must still be the disk's current one (otherwise
the job is stale and does nothing), and the work is the same whatever the kind: make the
EBS tags of the disk's volumes and snapshots agree with the row (gpudev/disks/tagging.py).
A create has nothing in EBS yet (the volume appears at first use). A clone's disk first
gets its copy of the source's latest snapshot (gpudev/disks/clone.py). One job per disk runs at
a time (a session advisory lock on the disk's id), so a late job never undoes a newer one.

`operation_status`: requested → running → completed, or failed with `operation_error`
(what `disk show` prints); a failed job raises, so the queue delivers it again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from gpudev.disks.clone import CloneSourceLost, DiskClones
from gpudev.disks.ebs import list_gpudev_snapshots, list_gpudev_volumes
from gpudev.disks.tagging import apply_tags, plan_tags
from gpudev.errors import GpuDevError
from gpudev.jobs import DiskJob
from gpudev.observability import logger
from gpudev.repositories import DiskOperationsRepository


class DiskOperationFailed(GpuDevError):
    """EBS refused a disk job's change; recorded on the row, the job is retried."""


class DiskOperations:
    def __init__(self, conn: psycopg.Connection[Any], ec2: Any):
        if not conn.autocommit:
            raise ValueError("DiskOperations needs an autocommit connection")
        self._disks = DiskOperationsRepository(conn)
        self._ec2 = ec2

    def handle(self, job: DiskJob) -> str:
        self._disks.lock(job.disk_id)
        try:
            return self._run(job)
        finally:
            self._disks.unlock(job.disk_id)

    def _run(self, job: DiskJob) -> str:
        disk = self._disks.start(job.disk_id, job.operation_id)
        if disk is None:
            current = self._disks.get(job.disk_id)
            if current is None:
                return "no such disk: nothing to do"
            if current.operation_id != job.operation_id:
                return "stale: a newer request on this disk supersedes it"
            return "already done"
        try:
            if disk.cloned_from is not None and not disk.is_deleted:
                # a clone's copy first, whichever operation comes (a rename may supersede
                # the clone's own job): the operation completes only once the copy did
                DiskClones(self._ec2).copy(disk, self._disks.get(disk.cloned_from))
            volumes = list_gpudev_volumes(self._ec2, disk.user_id)
            snapshots = list_gpudev_snapshots(self._ec2, disk.user_id)
            plan = plan_tags(disk, volumes, snapshots, now=datetime.now(UTC))
            apply_tags(self._ec2, plan)
        except (BotoCoreError, ClientError) as exc:
            error = f"EBS refused the {job.operation}: {exc}"
            self._disks.failed(job.disk_id, job.operation_id, error)
            logger.warning("disk operation failed", extra={"job": job.model_dump(mode="json")})
            raise DiskOperationFailed(error) from exc
        except CloneSourceLost as exc:  # permanent: recorded, not retried
            self._disks.failed(job.disk_id, job.operation_id, str(exc))
            return f"{job.operation} failed: {exc}"
        self._disks.done(job.disk_id, job.operation_id, tagged_as=disk.disk_name)
        logger.info(
            "disk operation done",
            extra={
                "operation": job.operation,
                "disk_id": str(job.disk_id),
                "resources": plan.resources,
                "tagged": len(plan.set_tags),
                "untagged": len(plan.clear_deleted),
            },
        )
        return f"{job.operation} done"
