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
