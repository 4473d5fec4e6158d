"""`python -m localcloud` in a child process of a test, with its own embedded PostgreSQL
(under .local, so the unprivileged server user can reach it): stopping one in the middle of
work must not touch the session's clouds, which share the test process's moto, environment
and pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from localcloud.options import Ports
from localcloud.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]


def child_environment() -> dict[str, str]:
    # The child starts its own PostgreSQL, so the PostgreSQL it leaves (or not) is its own.
    return {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}


def free_ports() -> dict[str, int]:
    """A free port for each server it would otherwise start on a fixed one (PostgreSQL's is
    free by default): so tests running at once never collide on `make run`'s ports."""
    return {name: free_port() for name in vars(Ports()) if name != "postgres"}


class LocalCloudProcess:
    """`python -m localcloud` on the given ports, waited for until its banner."""

    def __init__(self, state_dir: Path, ports: dict[str, int], *options: str):
        self.state_dir = state_dir
        arguments = [f"--{name}-port={port}" for name, port in ports.items()] + list(options)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localcloud", f"--state-dir={state_dir}", *arguments],
            cwd=ROOT,
            env=child_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []

    def wait_until_up(self, timeout: float = 90) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        for line in self.process.stdout:
            self.output.append(line)
            if "gpu-dev local cloud is up" in line:
                return dict(json.loads((self.state_dir / "stack.json").read_text()))
            assert time.monotonic() < deadline, "".join(self.output[-30:])
        raise AssertionError("exited before its banner:\n" + "".join(self.output[-30:]))

    @property
    def postgres_pid(self) -> int:
        pid_file = self.state_dir / "postgres" / "data" / "postmaster.pid"
        return int(pid_file.read_text().splitlines()[0])

    def interrupt(self) -> float:
        """Ctrl+C; the seconds until the process has exited."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            out, _ = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        self.output.append(out)
        return time.monotonic() - began

    def api_process_pids(self) -> list[int]:
        """Its children serving the API function (`--api-processes`)."""
        return [pid for pid, name in self.serving_processes().items() if name == "Api"]

    def serving_processes(self) -> dict[int, str]:
        """Its children serving a function (`--api-processes`, `--function-processes`):
        pid to the function's name."""
        return {
            pid: json.loads(arguments[arguments.index(b"localcloud.lambda_process") + 1])["name"]
            for pid, arguments in self._children()
            if b"localcloud.lambda_process" in arguments
        }

    def sqs_process_pid(self) -> int:
        """Its child serving SQS (localcloud/sqs_process.py)."""
        [pid] = [pid for pid, command in self._children() if b"localcloud.sqs_process" in command]
        return pid

    def _children(self) -> list[tuple[int, list[bytes]]]:
        """(pid, command line) of each of its children."""
        children = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
                command = (status.parent / "cmdline").read_bytes()
            except (OSError, ValueError):
                continue  # ended meanwhile
            if int(fields["PPid"]) == self.process.pid:
                children.append((int(status.parent.name), command.split(b"\0")))
        return children

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
