"""A child process the local cloud talks to over a socket pair (`python -m MODULE ARGS... FD`,
its end of the socket last): a function's execution environment (processes.py), SQS
(sqs_process.py). The child serves until its end reads end-of-file, which happens when we
close ours or die, so it is never an orphan; `end` closes ours, waits, then kills and reaps."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A file for the children's output (their log records on stderr, EMF on stdout) instead of
# ours: test sessions name one each (tests/support/test_logs.py), so the terminal shows tests.
OUTPUT_VARIABLE = "LOCALCLOUD_CHILD_OUTPUT"


class ChildProcess:
    def __init__(self, module: str, arguments: list[str], environment: dict[str, str] | None):
        ours, theirs = socket.socketpair()
        output_file = os.environ.get(OUTPUT_VARIABLE)
        output = open(output_file, "ab") if output_file else None  # noqa: SIM115
        with theirs:
            try:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", module, *arguments, str(theirs.fileno())],
                    env=environment,  # None: ours
                    cwd=ROOT,
                    pass_fds=(theirs.fileno(),),
                    stdout=output,
                    stderr=subprocess.STDOUT if output else None,
                )
            finally:
                if output:
                    output.close()  # the child holds its own copy
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
