"""Saving the disks of reservations whose execution died (docs/architecture.md, "The
sweeper"): a disk held by an ended reservation is its execution's to save (`Save the disk`,
`Free the disk`) while that execution runs. Once it is confirmed not running, each sweeper
run advances the disk one step through the lifecycle's own code
(`lifecycle.disk.save_for_the_sweeper`): snapshot requested once the pod is gone and the
volume detached, snapshot completed, volume deleted, disk freed. The state is EC2's, found
by the reservation's tags, so nothing sleeps and a repeated run repeats nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from gpudev.observability import logger
from gpudev.repositories.sweeper import SweeperRepository
from gpudev.sweeper.plan import disks_to_save, held_executions_to_describe

# One step for one holder: "none" (not held any more), "waiting", "failed" (a snapshot that
# failed: its reason is on the disk, tried again next run) or "freed".
SaveStep = Callable[[UUID], str]


@dataclass
class DiskSaver:
    rows: SweeperRepository
    describe: Callable[[str], str]  # execution ARN → status (EXECUTION_MISSING if gone)
    save: SaveStep

    def run(self, running: set[str], described: dict[str, str], statistics: dict[str, int]) -> None:
        """`running`/`described`: what the run already knows of executions; read after the
        run's ends, so the reservations it just ended are saved from this run on."""
        held = self.rows.held_disks()
        to_describe = held_executions_to_describe(held, running, described)
        for arn in to_describe:
            described[arn] = self.describe(arn)
        statistics["executions_described"] += len(to_describe)
        for reservation_id in disks_to_save(held, running, described):
            try:
                step = self.save(reservation_id)
            except Exception as exc:  # one disk's failure never stops the run
                statistics["errors"] += 1
                logger.error(
                    "sweeper could not advance a disk",
                    extra={"reservation_id": str(reservation_id), "error": repr(exc)},
                )
                continue
            statistics[f"disks_{step}"] += 1
            log: Any = logger.warning if step in ("freed", "failed") else logger.info
            log(
                "sweeper advanced the disk of a reservation whose execution died",
                extra={"reservation_id": str(reservation_id), "step": step},
            )
