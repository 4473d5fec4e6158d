"""Every task of the reservation state machine by the name its ASL payload gives, with the
models of what it takes and what the state machine receives from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudev.lifecycle.active import checkpoint, wait_while_active
from gpudev.lifecycle.building import build_image
from gpudev.lifecycle.disk import check_disk, release_disk, save_disk, take_disk
from gpudev.lifecycle.outages import outage_over
from gpudev.lifecycle.payloads import (
    BuildImageOutput,
    CheckDiskOutput,
    CheckpointOutput,
    CheckReadyOutput,
    ProvisionOutput,
    ReleaseDiskOutput,
    SaveDiskOutput,
    StartOutput,
    TakeDiskOutput,
    TaskInput,
    TaskName,
    TaskOutput,
    TearDownOutput,
)
from gpudev.lifecycle.provision import check_ready, provision
from gpudev.lifecycle.queueing import start, wait_for_capacity
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.teardown import tear_down
from gpudev.signals import Wake


@dataclass(frozen=True)
class Task:
    run: Callable[[Lifecycle, Any], TaskOutput | None]
    # What the state's result is: the return value, or for a waitForTaskToken task (which
    # returns nothing) what is sent through its token.
    output: type[TaskOutput] | type[Wake]
    parks: bool = False  # a waitForTaskToken task


TASKS: dict[TaskName, Task] = {
    TaskName.START: Task(start, StartOutput),
    TaskName.WAIT_FOR_CAPACITY: Task(wait_for_capacity, Wake, parks=True),
    TaskName.PROVISION: Task(provision, ProvisionOutput),
    TaskName.CHECK_READY: Task(check_ready, CheckReadyOutput),
    TaskName.CHECKPOINT: Task(checkpoint, CheckpointOutput),
    TaskName.WAIT_WHILE_ACTIVE: Task(wait_while_active, Wake, parks=True),
    TaskName.TEAR_DOWN: Task(tear_down, TearDownOutput),
    TaskName.TAKE_DISK: Task(take_disk, TakeDiskOutput),
    TaskName.CHECK_DISK: Task(check_disk, CheckDiskOutput),
    TaskName.SAVE_DISK: Task(save_disk, SaveDiskOutput),
    TaskName.RELEASE_DISK: Task(release_disk, ReleaseDiskOutput),
    TaskName.BUILD_IMAGE: Task(build_image, BuildImageOutput),
}


def run(lc: Lifecycle, task: TaskInput) -> dict[str, Any] | None:
    """Run `task`; its output as the state machine reads it. A task that ran through
    ends any "waiting for ..." an earlier attempt put on the status line."""
    output = TASKS[task.task].run(lc, task)
    outage_over(lc.rows, task.reservation_id)
    return output.to_state_machine() if output is not None else None
