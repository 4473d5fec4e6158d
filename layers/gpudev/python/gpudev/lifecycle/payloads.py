"""What the reservation state machine (statemachines/reservation.asl.json) and its tasks
pass each other: one model per task input and output.

The ASL names a task by `TaskName`'s value and branches on the outcome names below;
`tests/unit/test_task_payloads.py` reads the ASL and fails when a Choice state tests a value
an output cannot take, a payload names a task or a field that does not exist, or a path
reads a field an output does not have.

A waitForTaskToken task's output is not the Lambda's return value but what whoever wakes it
sends through the token (`Wake`, by `Signals.wake`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gpudev.models import ReservationStatus


class TaskName(StrEnum):
    START = "start"
    WAIT_FOR_CAPACITY = "wait_for_capacity"
    PROVISION = "provision"
    CHECK_READY = "check_ready"
    CHECKPOINT = "checkpoint"
    WAIT_WHILE_ACTIVE = "wait_while_active"
    TEAR_DOWN = "tear_down"
    TAKE_DISK = "take_disk"
    CHECK_DISK = "check_disk"
    SAVE_DISK = "save_disk"
    RELEASE_DISK = "release_disk"
    BUILD_IMAGE = "build_image"


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- inputs: the `Payload` of each Task state ----------------------------------------------
class _TaskInput(_Payload):
    reservation_id: UUID


class Start(_TaskInput):
    task: Literal[TaskName.START] = TaskName.START
    execution_arn: str


class WaitForCapacity(_TaskInput):
    task: Literal[TaskName.WAIT_FOR_CAPACITY] = TaskName.WAIT_FOR_CAPACITY
    task_token: str


class Provision(_TaskInput):
    task: Literal[TaskName.PROVISION] = TaskName.PROVISION


class CheckReady(_TaskInput):
    task: Literal[TaskName.CHECK_READY] = TaskName.CHECK_READY


class Checkpoint(_TaskInput):
    task: Literal[TaskName.CHECKPOINT] = TaskName.CHECKPOINT


class WaitWhileActive(_TaskInput):
    task: Literal[TaskName.WAIT_WHILE_ACTIVE] = TaskName.WAIT_WHILE_ACTIVE
    task_token: str


class StepFunctionsFailure(BaseModel):
    """A Catch's `ResultPath` content: the error name and its cause (JSON from Lambda)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")

    def reason(self) -> str:
        """One line: `Error: message`, the message taken from a Lambda cause's JSON."""
        cause = self.cause or ""
        try:
            parsed = json.loads(cause)
            message = parsed.get("errorMessage") if isinstance(parsed, dict) else None
        except (TypeError, ValueError):
            message = cause or None
        name = self.error or "error"
        return f"{name}: {message}" if message else name


EndingKind = Literal["expire", "cancel", "stale", "failed"]


class Ending(_Payload):
    """How the execution is ending, set by the Pass state before `Tear down`."""

    kind: EndingKind = "failed"
    reason: str | None = None
    error: StepFunctionsFailure | None = None


class TearDown(_TaskInput):
    task: Literal[TaskName.TEAR_DOWN] = TaskName.TEAR_DOWN
    ending: Ending = Ending()


class TakeDisk(_TaskInput):
    task: Literal[TaskName.TAKE_DISK] = TaskName.TAKE_DISK


class CheckDisk(_TaskInput):
    task: Literal[TaskName.CHECK_DISK] = TaskName.CHECK_DISK


class SaveDisk(_TaskInput):
    task: Literal[TaskName.SAVE_DISK] = TaskName.SAVE_DISK


class ReleaseDisk(_TaskInput):
    task: Literal[TaskName.RELEASE_DISK] = TaskName.RELEASE_DISK


class BuildImage(_TaskInput):
    task: Literal[TaskName.BUILD_IMAGE] = TaskName.BUILD_IMAGE


TaskInput = (
    Start
    | WaitForCapacity
    | Provision
    | CheckReady
    | Checkpoint
    | WaitWhileActive
    | TearDown
    | TakeDisk
    | CheckDisk
    | SaveDisk
    | ReleaseDisk
    | BuildImage
)
_TASK_INPUT: TypeAdapter[TaskInput] = TypeAdapter(Annotated[TaskInput, Field(discriminator="task")])


class InvalidTaskEvent(ValueError):
    pass


def parse_task(event: Any) -> TaskInput:
    """The task an invocation asks for, validated; InvalidTaskEvent says what is wrong."""
    try:
        return _TASK_INPUT.validate_python(event)
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        names = ", ".join(TaskName)
        raise InvalidTaskEvent(f"invalid task event: {problems} (tasks: {names})") from None


def _problem(error: Any) -> str:
    if error["type"] == "union_tag_invalid":
        return f"unknown task {error['ctx']['tag']!r}"
    if error["type"] == "union_tag_not_found":
        return "no task named"
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"


# -- outputs: what the Choice states branch on ---------------------------------------------
class TaskOutput(_Payload):
    def to_state_machine(self) -> dict[str, Any]:
        """The Lambda's return value: unset fields left out, as the ASL expects."""
        return self.model_dump(mode="json", exclude_none=True)


class StartOutput(TaskOutput):
    outcome: Literal["queue", "cancel", "gone"]
    # with "queue": every wait the state machine makes, in real seconds
    queue_timeout_seconds: int | None = None
    ready_poll_seconds: int | None = None
    fault_retry_seconds: int | None = None
    builds_image: bool = False  # with "queue": its image is built first (lifecycle/building.py)


class ProvisionOutput(TaskOutput):
    outcome: Literal["provisioning", "cancel", "failed"]
    reason: str | None = None  # with "failed": becomes the failure reason


class CheckReadyOutput(TaskOutput):
    outcome: Literal["ready", "waiting", "cancel", "failed"]
    reason: str | None = None  # with "failed": becomes the failure reason
    detail: str | None = None  # with "waiting": what the pod is waiting for


class CheckpointOutput(TaskOutput):
    outcome: Literal["park", "expire", "idle", "cancel", "gone", "failed"]
    reason: str | None = None  # with "failed" or "idle": becomes the ending's reason
    seconds: int | None = None  # with "park": until the next checkpoint


class TearDownOutput(TaskOutput):
    status: ReservationStatus
    objects_deleted: int


class TakeDiskOutput(TaskOutput):
    outcome: Literal["none", "creating", "in_use", "cancel"]
    reason: str | None = None  # with "in_use": becomes the failure reason


class CheckDiskOutput(TaskOutput):
    outcome: Literal["ready", "waiting", "cancel", "failed"]
    reason: str | None = None  # with "failed": becomes the failure reason


class SaveDiskOutput(TaskOutput):
    # handoff: not saved within the save's patience; the execution leaves it to the sweeper
    outcome: Literal["none", "waiting", "saved", "failed", "handoff"]
    seconds: int  # with "waiting" or "failed": before looking again
    detail: str | None = None  # what it waits for, or why the snapshot failed


class ReleaseDiskOutput(TaskOutput):
    outcome: Literal["released"]


class BuildImageOutput(TaskOutput):
    outcome: Literal["built", "building", "failed", "cancel"]
    seconds: int | None = None  # with "building": before looking again
    reason: str | None = None  # with "failed": becomes the failure reason (the log's tail)
