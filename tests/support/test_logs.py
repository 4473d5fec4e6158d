"""One log file per test session for what the local cloud and the functions log, so the
terminal shows pytest's progress, failures and the slowest tests, not JSON records.

`make test` (tools/test_tiers.py) names the file of each session in `GPUDEV_TEST_LOG`;
plain `pytest` writes `.local/test-logs/pytest.log`. Routed there: the functions' powertools
records (in-process, their JSON as in CloudWatch), the local cloud's own `localcloud.*`
records from INFO up, and the output of its child processes (functions' execution
environments, SQS: `localcloud/child_process.py`). Records still reach pytest's log
capture, so a failing test shows its own under "Captured log"."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO

from localcloud.child_process import OUTPUT_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = "GPUDEV_TEST_LOG"
DEFAULT = ROOT / ".local" / "test-logs" / "pytest.log"
FORMAT = "%(asctime)s %(levelname)-7s %(name)-20s %(message)s"


def session_log() -> Path:
    """This session's file: `GPUDEV_TEST_LOG` (relative to the repository), else the default."""
    named = os.environ.get(VARIABLE)
    return ROOT / named if named else DEFAULT


def route_logs(path: Path) -> IO[str]:
    """Send the session's log records and its children's output to `path`, emptied first;
    the open file (kept for the session)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    # Appending, as the children do: no writer overwrites another's lines. Line-buffered, so
    # the file is readable while the session runs.
    stream = path.open("a", buffering=1)
    os.environ[OUTPUT_VARIABLE] = str(path)  # children append to it (O_APPEND)
    from gpudev.observability import logger

    logger.registered_handler.setStream(stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(FORMAT))
    local_cloud = logging.getLogger("localcloud")
    local_cloud.addHandler(handler)
    local_cloud.setLevel(logging.INFO)
    return stream
