"""StopExecution as AWS does it: the execution is ABORTED at once, also while it waits on a
task token.

moto's Step Functions marks the program stopped but leaves a `.waitForTaskToken` state
waiting on its callback until the state's timeout ends; it then records a task time-out
and the execution FAILED. In AWS, `StopExecution` answers with the execution already
ABORTED, and its open task tokens are closed (`SendTaskSuccess` answers `TaskTimedOut`).
Operators stop a stuck reservation's execution and rely on the sweeper to clean up
(docs/architecture.md, "The sweeper"), so the local cloud must abort as AWS does.

The seam wraps moto's `Execution.stop`: after moto marks the program stopped, it records the
execution ABORTED with its stop date, error and cause, and wakes every callback the
execution waits on. The woken state fails its task as timed out, which moto would turn into
the program's error: a stopped program keeps its stop instead (`Environment.set_error`), so
the worker's own end again reports ABORTED and the history ends `ExecutionAborted`. One
difference stays: the history shows a `TaskTimedOut` event before it, which AWS does not
record. moto is pinned exactly, and
tests/unit/test_moto_seam.py fails loudly if the method moves or changes shape.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime

from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, ExecutionStatus
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
from moto.stepfunctions.parser.backend.execution import Execution

EXPECTED_STOP_SIGNATURE = (
    "(self, stop_date: 'datetime.datetime', error: 'str | None', cause: 'str | None')"
)

_MOTO_STOP = Execution.stop
_MOTO_SET_ERROR = Environment.set_error


def stop_seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_STOP))


def install() -> Callable[[], None]:
    """Abort executions at once on StopExecution, from now on."""

    def stop(self: Execution, stop_date: datetime, error: str | None, cause: str | None) -> None:
        _MOTO_STOP(self, stop_date=stop_date, error=error, cause=cause)
        worker = self.exec_worker
        if worker is None or worker.env is None or self.exec_status != ExecutionStatus.RUNNING:
            return
        self.exec_status = ExecutionStatus.ABORTED
        self.stop_date = stop_date
        self.error, self.cause = error, cause
        for endpoint in list(worker.env.callback_pool_manager._pool.values()):
            endpoint.interrupt_all()

    def set_error(self: Environment, error: ExecutionFailedEventDetails) -> None:
        # The woken state fails its task; a stopped program stays stopped, as in AWS.
        if isinstance(self._program_state, ProgramStopped):
            return
        _MOTO_SET_ERROR(self, error)

    Execution.stop = stop  # type: ignore[method-assign]
    Environment.set_error = set_error  # type: ignore[method-assign]

    def uninstall() -> None:
        Execution.stop = _MOTO_STOP  # type: ignore[method-assign]
        Environment.set_error = _MOTO_SET_ERROR  # type: ignore[method-assign]

    return uninstall
