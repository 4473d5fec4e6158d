"""Polling for a condition that the local cloud makes true in its own time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], timeout: float = 15, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s: {message}")


def finished_execution(sfn: Any, execution_arn: str, timeout: float = 30) -> Any:
    """A Step Functions execution's description once it is no longer running."""

    def described() -> Any:
        description = sfn.describe_execution(executionArn=execution_arn)
        return description if description["status"] != "RUNNING" else None

    return wait_for(described, timeout, f"{execution_arn} still running")
