"""Runs our real Lambda handlers in this process, as the local cloud's Lambda service.

A handler is loaded from `functions/<folder>/<module>.py` under a unique module name (every
function has a `handler.py`), with its folder on sys.path as Lambda's task root, called with
the event and a Lambda-like context, and its failure is reported in Lambda's error shape
(`errorType`, `errorMessage`, `stackTrace`) so Step Functions Retry/Catch on error names
behave as in AWS.

Metrics are disabled here (POWERTOOLS_METRICS_DISABLED, set by the stack), and the set
powertools keeps is cleared after every invocation: with metrics disabled its flush
(`log_metrics`) neither prints nor clears, so in this long-lived process the values of every
invocation pile up, and `add_metric` prints the whole set as EMF on stdout, disabled or not,
once one metric holds 100 values (powertools 3.x, the EMF limit of 100 values per metric).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from cdk_app.declaration import FunctionSpec
from gpudev.observability import metrics
from localcloud.environment_state import new_environment_context

ACCOUNT_ID = "123456789012"


@dataclass
class LambdaContext:
    function_name: str
    memory_limit_in_mb: int
    timeout_seconds: int
    region: str
    aws_request_id: str
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"

    def __post_init__(self) -> None:
        self.invoked_function_arn = (
            f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.function_name}"
        )
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def add_task_root(spec: FunctionSpec) -> None:
    """Lambda puts the function's folder (its task root) on sys.path, so a handler imports
    its own modules by absolute name (the API's `routes`). All functions share this process:
    their folders' own top-level names must differ (`handler` never clashes: it is loaded by
    path under a name of its own)."""
    if str(spec.code_dir) not in sys.path:
        sys.path.append(str(spec.code_dir))


@dataclass(frozen=True)
class _Environment:
    """One execution environment: its handler module, and the context its load and its
    invocations run in, for what libraries keep per process (localcloud/environment_state.py)."""

    module: ModuleType
    context: contextvars.Context


@dataclass(frozen=True)
class Invocation:
    payload: Any
    errored: bool
    request_id: str
    # Set by an environment in its own process (localcloud/processes.py): which process
    # served it, the handler's own seconds, and SQL statements when counted.
    pid: int | None = None
    handler_seconds: float | None = None
    statements: int | None = None


class Invoker(Protocol):
    """What runs a function: LocalLambda here, or processes of its own (processes.py)."""

    def invoke(self, name: str, event: Any) -> Invocation: ...


class LocalLambda:
    """The local registry of functions, keyed by the declaration's names.

    As in Lambda, a function runs in execution environments, each one invocation at a time:
    an invocation takes an idle environment of its function or starts a new one (its handler
    module loaded afresh: a cold start), and gives it back when done. Sharing one module
    between concurrent invocations would share the request state a handler keeps in its
    module (powertools' current event, a batch processor's records) between callers, which
    production never does (tests/e2e/test_lambda_environments.py). The layer's modules are
    one copy for all, as they are within one environment; what a library keeps for the whole
    process (powertools' resolver keeps the current event on its class) is made per
    environment by running each environment in a context of its own (environment_state.py)."""

    def __init__(self, functions: tuple[FunctionSpec, ...], region: str):
        self._specs = {spec.name: spec for spec in functions}
        self._region = region
        self._idle: dict[str, list[_Environment]] = {spec.name: [] for spec in functions}
        self._started: dict[str, int] = dict.fromkeys(self._specs, 0)
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self.invocations: dict[str, int] = dict.fromkeys(self._specs, 0)
        self.closed = False  # stopping: no new invocation starts (those running finish)

    @property
    def names(self) -> list[str]:
        return sorted(self._specs)

    def environments(self, name: str) -> int:
        """How many environments `name` has started."""
        return self._started[name]

    def prepare(self, name: str) -> None:
        """Start an environment of `name` now (its cold start) and leave it idle."""
        with self._environment(name):
            pass

    @contextlib.contextmanager
    def _environment(self, name: str) -> Iterator[_Environment]:
        with self._lock:
            idle = self._idle[name]
            environment = idle.pop() if idle else None
            if environment is None:
                self._started[name] += 1
                number = self._started[name]
        if environment is None:
            # A cold start takes a second: loads wait for each other (they change sys.modules),
            # but not the invocations that found a warm environment.
            context = new_environment_context()
            with self._loading:
                module = context.run(self._load, self._specs[name], number)
            environment = _Environment(module, context)
        try:
            yield environment
        finally:
            with self._lock:
                self._idle[name].append(environment)

    @staticmethod
    def _load(spec: FunctionSpec, number: int) -> ModuleType:
        """The handler module of a new environment, with its own copies of the modules
        beside it in its folder (an API's routers): another environment's are forgotten
        first, so this one imports them afresh, as its own process would."""
        module_name = spec.handler.rpartition(".")[0]
        add_task_root(spec)
        beside = {path.stem for path in spec.code_dir.iterdir() if path.stem != "__pycache__"}
        for loaded in [m for m in sys.modules if m.partition(".")[0] in beside]:
            del sys.modules[loaded]
        path = spec.code_dir / f"{module_name.replace('.', '/')}.py"
        module_spec = importlib.util.spec_from_file_location(
            f"gpudev_functions.{spec.folder}.{module_name}_{number}", path
        )
        assert module_spec and module_spec.loader, f"cannot load {path}"
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module  # as an import would: pydantic needs it
        module_spec.loader.exec_module(module)
        return module

    def invoke(self, name: str, event: Any) -> Invocation:
        spec = self._specs[name]
        request_id = str(uuid.uuid4())
        with self._lock:
            self.invocations[name] += 1
        if self.closed:
            refused = {
                "errorType": "ServiceException",
                "errorMessage": f"{name} not invoked: the local cloud is stopping",
                "requestId": request_id,
            }
            return Invocation(refused, True, request_id)
        context = LambdaContext(
            function_name=spec.deployed_name,
            memory_limit_in_mb=spec.memory_mb,
            timeout_seconds=spec.timeout_seconds,
            region=self._region,
            aws_request_id=request_id,
        )
        attribute = spec.handler.rpartition(".")[2]
        try:
            with self._environment(name) as environment:
                handler: Callable[[Any, Any], Any] = getattr(environment.module, attribute)
                payload = environment.context.run(handler, event, context)
                return Invocation(payload, False, request_id)
        except Exception as exc:
            error = {
                "errorType": type(exc).__name__,
                "errorMessage": str(exc),
                "stackTrace": traceback.format_tb(exc.__traceback__),
                "requestId": request_id,
            }
            return Invocation(error, True, request_id)
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()
