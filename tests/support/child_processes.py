"""Checks on the local cloud's child processes (localcloud/child_process.py): alive or not,
and never left behind when the process that started them is killed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")  # a zombie (exited, not reaped) counts as left behind
    return stat.exists()


def running(pid: int) -> bool:
    """Whether `pid` still runs: a zombie (exited, its parent not yet reaping it) does not,
    though it answers kill(0)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_for(condition: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def assert_child_leaves_when_its_parent_is_killed(parent_script: str) -> None:
    """Run `parent_script` (it starts a child, prints the child's pid, then blocks), kill it
    with SIGKILL (no stop, no cleanup: its socket closes with it): the child must leave."""
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_script],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
    finally:
        parent.kill()
        parent.wait()
    wait_for(lambda: not alive(child))
