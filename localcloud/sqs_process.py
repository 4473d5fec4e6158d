"""SQS on an endpoint and in a process of its own, as AWS serves each service on its own
endpoint: moto's server in `python -m localcloud.sqs_process REGION PORT FD`, with our seams in its
SQS (localcloud/moto_sqs.py); every client reaches it through `AWS_ENDPOINT_URL_SQS`
(botocore's service-specific endpoint, which takes precedence over `AWS_ENDPOINT_URL`).

Why a process: the API's `SendMessage` is its writes' only call to AWS. In the cloud's process
it waited for the interpreter lock behind moto's Step Functions, the stand-in's simulated
cluster and every other AWS call of the lifecycles: a send took 3.5 ms at p50 and 82 ms at
p99 inside moto under bench/api_load.py's open loop (docs/decisions.md, 2026-11-24). SQS
itself answers in single-digit milliseconds whatever else the account is doing.

The child serves SQS alone (a call of another service sent there fails, as it would at
SQS's endpoint). It says its endpoint over the socket (file descriptor FD) once it is
serving, then waits for that socket to close: the parent closes it on stop, or dies, so the
child is never an orphan. Its queues live and die with it. If it exits while the cloud runs,
`watch`'s callback is told once (the cloud cannot deliver a job any more: `python -m
localcloud` stops with an error).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

from localcloud.child_process import ChildProcess
from localcloud.deadline import Deadline

START_SECONDS = 60.0  # importing moto on a busy machine; ~1 s on a quiet one


class SqsProcessError(RuntimeError):
    pass


class SqsProcess(ChildProcess):
    """The parent's handle: `wait_until_serving` returns once the child serves; `stop` ends
    and reaps it."""

    def __init__(self, region: str, port: int = 0):
        super().__init__("localcloud.sqs_process", [region, str(port)], environment=None)
        self.endpoint_url = ""
        self._ending = False

    def wait_until_serving(self, timeout: float = START_SECONDS) -> SqsProcess:
        try:
            if not self.connection.poll(timeout):
                raise SqsProcessError(f"SQS process did not start within {timeout:g} s")
            self.endpoint_url = json.loads(self.connection.recv_bytes())["endpoint_url"]
        except (EOFError, OSError) as error:
            # It exited before serving (its own error, on stderr, says why: e.g. a busy port).
            self.end(timeout=5.0)
            raise SqsProcessError(
                f"SQS process exited with {self.process.returncode} before serving"
            ) from error
        except SqsProcessError:
            self.end()
            raise
        return self

    def watch(self, exited: Callable[[int], None]) -> None:
        """Call `exited(return code)` from a daemon thread if the child exits before `end`."""

        def wait() -> None:
            code = self.process.wait()
            if not self._ending:
                exited(code)

        threading.Thread(target=wait, name="sqs-process-watch", daemon=True).start()

    def end(self, timeout: float = 0.0) -> None:
        self._ending = True
        super().end(timeout)

    def stop(self, deadline: Deadline) -> None:
        """Close our socket (the child exits at once), wait until the deadline, then kill."""
        self.end(timeout=deadline.remaining(at_least=0.5))


def serve(connection: Connection, region: str, port: int) -> None:
    from localcloud import moto_sqs
    from localcloud.aws import LocalAws
    from localcloud.collector import collect_less

    moto_sqs.install()
    aws = LocalAws(region, port=port, service="sqs").start()
    collect_less()  # what the start made lives as long as the process: out of full passes
    # A parent whose start failed meanwhile (PostgreSQL, a port) has closed its end already:
    # there is no one to tell, and its own error says why, so no traceback of ours.
    with contextlib.suppress(BrokenPipeError):
        connection.send_bytes(json.dumps({"endpoint_url": aws.endpoint_url}).encode())
    # Nothing is ever sent: this returns when the parent closes our socket, or is gone.
    with contextlib.suppress(EOFError, OSError):
        connection.recv_bytes()


def main(argv: list[str]) -> int:
    # Ctrl+C in a terminal reaches the whole foreground group: the parent stops us with itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    region, port, fd = argv
    connection = Connection(int(fd))
    try:
        serve(connection, region, int(port))
    finally:
        connection.close()
    # At once, the server's threads with us: no interpreter teardown under moto's daemon
    # threads (long polls in flight), which was seen to abort (localcloud/__main__.py).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
