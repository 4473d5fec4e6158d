"""One Lambda execution environment as its own OS process (`python -m localcloud.lambda_process
SPEC FD`), started by localcloud/processes.py.

It imports the function's handler once (the cold start), says it is ready, then serves one
invocation at a time over the socket it was given (file descriptor FD): an event in, the
invocation out, each one JSON message, as Lambda's runtime API passes them. Its environment
is the function's, given by the parent: AWS is moto's HTTP server (AWS_ENDPOINT_URL),
PostgreSQL and the Kubernetes stand-in are reached over the network. It exits when the
parent closes the socket, or dies (the socket then reads end-of-file): never an orphan.
Ctrl+C in a terminal reaches every process of the foreground group; this one ignores it
and leaves its lifetime to the parent, which stops it with the cloud.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from cdk_app.declaration import FunctionSpec
from localcloud.lambdas import LocalLambda
from localcloud.statements import COUNT_STATEMENTS_VARIABLE, StatementCounter

SPEC_FIELDS = ("name", "folder", "handler", "memory_mb", "timeout_seconds", "source_root")


def spec_argument(spec: FunctionSpec) -> str:
    """What of a function's declaration its environment needs, as one argument."""
    return json.dumps({name: getattr(spec, name) for name in SPEC_FIELDS})


def serve(spec: FunctionSpec, connection: Connection) -> None:
    lambdas = LocalLambda((spec,), os.environ["AWS_REGION"])
    counter = StatementCounter() if os.environ.get(COUNT_STATEMENTS_VARIABLE) else None
    began = time.perf_counter()
    lambdas.prepare(spec.name)
    ready = {"pid": os.getpid(), "init_seconds": time.perf_counter() - began}
    connection.send_bytes(json.dumps(ready).encode())
    while True:
        try:
            event = json.loads(connection.recv_bytes())
        except (EOFError, OSError):  # the parent closed our socket, or is gone
            return
        statements_before = counter.count if counter else 0
        began = time.perf_counter()
        invocation = lambdas.invoke(spec.name, event)
        reply: dict[str, Any] = {
            "payload": invocation.payload,
            "errored": invocation.errored,
            "request_id": invocation.request_id,
            "handler_seconds": time.perf_counter() - began,
            "statements": counter.count - statements_before if counter else None,
        }
        connection.send_bytes(json.dumps(reply, default=str).encode())


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    spec_json, fd = argv
    connection = Connection(int(fd))
    try:
        serve(FunctionSpec(**json.loads(spec_json)), connection)
    finally:
        connection.close()
        if "gpudev.db.pool" in sys.modules:  # close our connections: PostgreSQL sees us leave
            from gpudev.db.pool import close_pool

            close_pool(timeout=1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
