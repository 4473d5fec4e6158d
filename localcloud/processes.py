"""A function's execution environments as separate OS processes, as Lambda runs them (opt-in:
`python -m localcloud --api-processes N --function-processes M`, `Options.api_processes` for
the API, `Options.function_processes` for every other function; `FunctionProcesses` routes
each function's invocations to its processes).

In the default local cloud every function runs in the cloud's own process, so the API, moto,
the Kubernetes stand-in, the gateway's threads and the event sources share one interpreter
lock: under concurrent load that measures the local cloud, not the API. Here an invocation
takes an idle environment process, or starts one (a cold start: `python -m
localcloud.lambda_process` imports the handler once) while fewer than `limit` exist, or
waits for one to come free (Lambda would throttle at its concurrency limit; a local cloud
queues instead). Each process serves one invocation at a time.

As in Lambda, a process that dies during an invocation fails it with `Runtime.ExitError`,
one that outlives the function's timeout is killed and the invocation fails with "Task timed
out" (the gateway answers either with 502), and the next invocation starts a fresh process.
`stop` lets running invocations finish until the drain deadline, then ends every process
and reaps it: none is left behind. A process also exits by itself when this one dies.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from cdk_app.declaration import Deployment, FunctionSpec
from localcloud.child_process import ChildProcess
from localcloud.deadline import Deadline
from localcloud.lambda_process import spec_argument
from localcloud.lambdas import Invocation, Invoker
from localcloud.options import Options

log = logging.getLogger("localcloud.processes")
# A cold start's limit. Lambda's is 10 s; here many processes may import at once on a busy
# machine (20 clients warming up 20 environments), and nothing of ours relies on it.
INIT_SECONDS = 60.0
# How long an idle process is given on stop to leave by itself (it closes its pool first).
IDLE_EXIT_SECONDS = 0.5


def function_environment(spec: FunctionSpec, cloud_environment: dict[str, str]) -> dict[str, str]:
    """What one of `spec`'s processes runs with: the cloud's environment for its functions,
    with the pool size and database limits the function has when deployed (the shared
    process's larger pool and most lenient limits are for functions sharing one process)."""
    environment = {k: v for k, v in cloud_environment.items() if k != "DB_POOL_MAX_SIZE"}
    if spec.database is not None:
        environment["DB_STATEMENT_TIMEOUT_MS"] = str(spec.database.statement_timeout_ms)
        environment["DB_LOCK_TIMEOUT_MS"] = str(spec.database.lock_timeout_ms)
        environment["DB_APPLICATION_NAME"] = spec.deployed_name  # as deployed
    return environment | spec.environment


class _Environment(ChildProcess):
    """One process serving `spec`, and our end of its socket."""

    def __init__(self, spec: FunctionSpec, environment: dict[str, str]):
        super().__init__("localcloud.lambda_process", [spec_argument(spec)], environment)
        self.ready = False

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when `timeout` passed; `EOFError` when the process is
        gone (its socket closes as it exits)."""
        try:
            if not self.connection.poll(timeout):
                return None
            message: dict[str, Any] = json.loads(self.connection.recv_bytes())
            return message
        except OSError as error:
            raise EOFError(str(error)) from error


class ProcessEnvironments:
    """Up to `limit` processes serving `spec`, one invocation each at a time."""

    def __init__(self, spec: FunctionSpec, environment: dict[str, str], limit: int):
        if limit < 1:
            raise ValueError(f"{spec.name}: at least one process, not {limit}")
        self.spec = spec
        self.limit = limit
        self._environment = function_environment(spec, environment)
        self._idle: list[_Environment] = []
        self._busy: set[_Environment] = set()
        self._changed = threading.Condition()
        self.closed = False
        self.started = 0  # processes started, cold starts included after a crash

    def pids(self) -> list[int]:
        """The processes serving the function now, idle or busy."""
        with self._changed:
            return sorted(e.pid for e in [*self._idle, *self._busy])

    def busy_pids(self) -> list[int]:
        with self._changed:
            return sorted(e.pid for e in self._busy)

    def provision(self) -> int:
        """Start every process up to the limit now and wait for their cold starts, as
        Lambda's provisioned concurrency does (bench/api_load.py, so that its figures have
        no cold start in them); how many are ready."""
        with self._changed:
            starting = [
                _Environment(self.spec, self._environment)
                for _ in range(self.limit - len(self._idle) - len(self._busy))
            ]
            self.started += len(starting)
            self._busy.update(starting)
        for environment in starting:
            ready = False
            try:
                ready = environment.receive(timeout=INIT_SECONDS) is not None
            except EOFError:
                log.error("%s", self._lost(environment))
            environment.ready = ready
            self._give_back(environment, ready)
        return len(self.pids())

    def invoke(self, name: str, event: Any) -> Invocation:
        assert name == self.spec.name, f"{name}: these processes serve {self.spec.name}"
        request_id = str(uuid.uuid4())
        environment = self._take()
        if environment is None:
            return _failed(
                "ServiceException", f"{name} not invoked: the local cloud is stopping", request_id
            )
        healthy = False
        try:
            if not environment.ready:
                ready = environment.receive(timeout=INIT_SECONDS)
                if ready is None:
                    timed_out = f"Init timed out after {INIT_SECONDS:.0f} seconds"
                    return _failed("Sandbox.Timedout", timed_out, request_id)
                environment.ready = True
                seconds = ready["init_seconds"]
                log.info("%s: process %d ready in %.2f s", name, environment.pid, seconds)
            began = time.monotonic()
            environment.connection.send_bytes(json.dumps(event).encode())
            reply = environment.receive(timeout=self.spec.timeout_seconds)
            if reply is None:
                timed_out = f"Task timed out after {time.monotonic() - began:.2f} seconds"
                return _failed("Sandbox.Timedout", timed_out, request_id)
            healthy = True
            return Invocation(
                reply["payload"],
                reply["errored"],
                reply["request_id"],
                pid=environment.pid,
                handler_seconds=reply["handler_seconds"],
                statements=reply["statements"],
            )
        except (EOFError, OSError):  # it died: during its start or this invocation
            return _failed("Runtime.ExitError", self._lost(environment), request_id)
        finally:
            self._give_back(environment, healthy)

    @staticmethod
    def _lost(environment: _Environment) -> str:
        try:  # its socket closed as it exited: its status follows at once
            code: int | None = environment.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        return f"Runtime exited with error: process {environment.pid} ended ({code})"

    def _take(self) -> _Environment | None:
        with self._changed:
            while not self.closed:
                while self._idle:
                    environment = self._idle.pop()
                    if environment.process.poll() is None:
                        self._busy.add(environment)
                        return environment
                    environment.end()  # died while idle: Lambda starts another
                if len(self._busy) < self.limit:
                    environment = _Environment(self.spec, self._environment)
                    self.started += 1
                    self._busy.add(environment)
                    return environment
                self._changed.wait()
            return None

    def _give_back(self, environment: _Environment, healthy: bool) -> None:
        with self._changed:
            self._busy.discard(environment)
            if healthy and not self.closed:
                self._idle.append(environment)
            self._changed.notify_all()
        if not healthy or self.closed:
            environment.end()

    def close(self) -> None:
        """No new invocation; those running finish (`stop` then ends every process)."""
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def stop(self, deadline: Deadline) -> None:
        """No new invocation; those running get until `deadline`; then every process ends.
        The idle ones are all told at once (their sockets closed) and given at least
        IDLE_EXIT_SECONDS to leave by themselves, closing their database connections."""
        self.close()
        with self._changed:
            idle, self._idle = self._idle, []
        for environment in idle:
            environment.connection.close()
        for environment in idle:
            environment.end(timeout=deadline.remaining(at_least=IDLE_EXIT_SECONDS))
        with self._changed:
            self._changed.wait_for(lambda: not self._busy, timeout=deadline.remaining())
            busy = list(self._busy)
        for environment in busy:  # still running: ended (their invocations fail)
            log.warning("%s: ending busy process %d", self.spec.name, environment.pid)
            environment.process.kill()
        for environment in busy:
            environment.process.wait()


def _capped(limit: int, spec: FunctionSpec) -> int:
    """`limit`, or fewer where the function's reserved concurrency says so (0 is refused by
    ProcessEnvironments: a function Lambda would throttle entirely has no use here)."""
    reserved = spec.reserved_concurrency
    return limit if reserved is None else min(limit, reserved)


def _failed(error_type: str, message: str, request_id: str) -> Invocation:
    log.error("%s: %s", error_type, message)
    payload = {"errorType": error_type, "errorMessage": message, "requestId": request_id}
    return Invocation(payload, True, request_id)


class FunctionProcesses:
    """Functions in processes of their own, each with its own limit (`limits`: name to most
    processes, capped by the function's reserved concurrency as Lambda caps it); the others'
    invocations go to `in_process` (the cloud's own LocalLambda). A function's processes are
    started at its first invocation, with the environment given here, copied once: what
    changes in the cloud's environment later does not reach them."""

    def __init__(
        self,
        specs: tuple[FunctionSpec, ...],
        environment: dict[str, str],
        limits: dict[str, int],
        in_process: Invoker,
        identities: dict[str, dict[str, str]] | None = None,
    ):
        identities = identities or {}
        self.of = {
            spec.name: ProcessEnvironments(
                spec, environment | identities.get(spec.name, {}), _capped(limit, spec)
            )
            for spec in specs
            if (limit := limits.get(spec.name, 0))
        }
        self._in_process = in_process

    @classmethod
    def for_options(
        cls,
        deployment: Deployment,
        options: Options,
        environment: dict[str, str],
        in_process: Invoker,
        identities: Callable[[], dict[str, dict[str, str]]] = dict,
    ) -> FunctionProcesses | None:
        """The API's in up to `options.api_processes`, every other function's in up to
        `options.function_processes`; None when both are 0 (every function in process).
        `identities()`: credentials of the functions that sign as their own role (each
        process is one function's, so it can have its own, as in Lambda)."""
        api = deployment.api.function
        limits = {
            spec.name: options.api_processes if spec.name == api else options.function_processes
            for spec in deployment.functions
        }
        if not any(limits.values()):
            return None
        return cls(deployment.functions, environment, limits, in_process, identities())

    def invoke(self, name: str, event: Any) -> Invocation:
        environments = self.of.get(name)
        if environments is None:
            return self._in_process.invoke(name, event)
        return environments.invoke(name, event)

    def close(self) -> None:
        """No new invocation from now (each is refused as Lambda's are while the cloud
        stops); those running go on until `stop`."""
        for environments in self.of.values():
            environments.close()

    def stop(self, deadline: Deadline) -> None:
        """Every function's processes ended, all given until `deadline` (in parallel)."""
        stoppers = [
            threading.Thread(target=environments.stop, args=(deadline,), daemon=True)
            for environments in self.of.values()
        ]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
