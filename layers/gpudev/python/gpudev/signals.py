"""Waking a parked execution through its task token (Step Functions). The allocator wakes
an execution with its grant, the lifecycle and the jobs consumer with a change."""

from __future__ import annotations

import json
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict

from gpudev.observability import logger

# The token's task is over: completed already, timed out, or its execution has ended.
CLOSED = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


class Wake(BaseModel):
    """Sent through a parked execution's task token: the output of `Wait for capacity` and
    of `Active until the next checkpoint` (lifecycle/payloads.py types the other outputs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Literal["granted", "cancel", "changed"]

    def to_state_machine(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Signals:
    def __init__(self, stepfunctions: Any):
        self._stepfunctions = stepfunctions

    def wake(self, task_token: str, wake: Wake) -> bool:
        """True if delivered; False if the token is closed (anything else raises)."""
        output = wake.to_state_machine()
        try:
            self._stepfunctions.send_task_success(taskToken=task_token, output=json.dumps(output))
        except ClientError as exc:
            if exc.response["Error"]["Code"] in CLOSED:
                logger.info("task token already closed", extra={"output": output})
                return False
            raise
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        if not execution_arn:
            return False
        try:
            status = self._stepfunctions.describe_execution(executionArn=execution_arn)["status"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ExecutionDoesNotExist":
                return False
            raise
        return bool(status == "RUNNING")
