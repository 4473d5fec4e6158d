"""Step Functions in tests on moto: a state machine created, an execution waited for."""

from __future__ import annotations

import json
from typing import Any

from tests.support.waiting import wait_for

ROLE_ARN = "arn:aws:iam::123456789012:role/sfn"


def create_machine(sfn: Any, name: str, definition: dict[str, Any]) -> str:
    """The ARN of a new state machine `name` running `definition`."""
    created = sfn.create_state_machine(
        name=name, definition=json.dumps(definition), roleArn=ROLE_ARN
    )
    return str(created["stateMachineArn"])


def finished_execution(sfn: Any, execution_arn: str, timeout: float = 30) -> Any:
    """A Step Functions execution's description once it is no longer running."""

    def described() -> Any:
        description = sfn.describe_execution(executionArn=execution_arn)
        return description if description["status"] != "RUNNING" else None

    return wait_for(described, timeout, f"{execution_arn} still running")
