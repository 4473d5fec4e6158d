"""A child process the local cloud talks to over a socket pair (`python -m MODULE ARGS... FD`,
its end of the socket last): a function's execution environment (processes.py), SQS
(sqs_process.py). The child serves until its end reads end-of-file, which happens when we
close ours or die, so it is never an orphan; `end` closes ours, waits, then kills and reaps."""

from __future__ import annotations

import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ChildProcess:
    def __init__(self, module: str, arguments: list[str], environment: dict[str, str] | None):
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, *arguments, str(theirs.fileno())],
                env=environment,  # None: ours
                cwd=ROOT,
                pass_fds=(theirs.fileno(),),
            )
        self.connection = Connection(ours.detach())

    @property
    def pid(self) -> int:
        return self.process.pid

    def end(self, timeout: float = 0.0) -> None:
        """Close our socket (the child leaves when idle), wait `timeout`, then kill; reaped."""
        self.connection.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
