"""The private seam in moto's Step Functions we rely on: a state machine's program parsed once.

moto parses the definition with its ANTLR grammar, in pure Python, at the start of every
execution (`ExecutionWorker._get_evaluation_entrypoint`): 90–300 ms of CPU for our
reservation machine, in the process the gateway, moto and the lifecycles share. AWS compiles a
definition when it is created, not per execution. So a definition's program is parsed once
and every execution of it evaluates that program with an environment of its own.

The program is safe to share: its components keep what an execution changes in the
execution's `Environment` (variables, retry counters, the context object), keyed by each
component's `heap_key`. That key is made lazily on first read, so two executions starting at
once could each make a different key for the same component and lose a retry count: every
key is made here, before the program is shared. Only components of the states our machine
uses are shared this way: a definition with Parallel or Map states is parsed per execution,
as moto does (in moto 5.2.5 their run state is in worker pools made at each evaluation, but
sharing them was not verified further, and nothing of ours needs it). moto is pinned exactly
and tests/unit/test_moto_seam.py fails loudly if the method moves or changes shape.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from moto.stepfunctions.parser.asl.component.component import Component
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

EXPECTED_ENTRYPOINT_SIGNATURE = (
    "(self) -> moto.stepfunctions.parser.asl.component.eval_component.EvalComponent"
)
# States whose evaluation runs workers of its own (branches, iterations): their definitions
# are not shared (see the module's docstring).
_STATEFUL_STATE_TYPES = frozenset({"Parallel", "Map"})

_MOTO_ENTRYPOINT = ExecutionWorker._get_evaluation_entrypoint


def entrypoint_seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_ENTRYPOINT))


def _definition(worker: ExecutionWorker) -> str:
    return str(worker._evaluation_details.state_machine_details.definition)


def _state_types(states: Any) -> Iterator[str]:
    for state in (states or {}).values():
        yield str(state.get("Type"))
        yield from _state_types(
            (state.get("Iterator") or state.get("ItemProcessor") or {}).get("States")
        )
        for branch in state.get("Branches") or []:
            yield from _state_types(branch.get("States"))


def shareable(definition: str) -> bool:
    """Whether the program of `definition` can serve executions at once."""
    try:
        parsed = json.loads(definition)
    except ValueError:
        return False  # moto's parser reports what is wrong with it, per execution
    return not _STATEFUL_STATE_TYPES.intersection(_state_types(parsed.get("States")))


def _components(root: Any) -> Iterator[Component]:
    seen: set[int] = set()
    pending = [root]
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Component):
            yield value
            pending.extend(vars(value).values())
        elif isinstance(value, list | tuple | set | frozenset):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())


def settle_heap_keys(program: Any) -> int:
    """Make every component's heap key now, so executions sharing the program read one key."""
    evaluated = [c for c in _components(program) if isinstance(c, EvalComponent)]
    for component in evaluated:
        _ = component.heap_key
    return len(evaluated)


def install() -> Callable[[], None]:
    """Parse each shareable definition once for the executions started from now on."""
    programs: dict[str, Any] = {}
    unshared: set[str] = set()  # definitions with states whose programs are not shared
    lock = threading.Lock()

    def _get_evaluation_entrypoint(self: ExecutionWorker) -> Any:
        definition = _definition(self)
        program = programs.get(definition)
        if program is not None:
            return program
        with lock:  # one parse per definition, even when executions start together
            program = programs.get(definition)
            if program is None and definition not in unshared:
                if shareable(definition):  # decided once per definition
                    program = _MOTO_ENTRYPOINT(self)
                    settle_heap_keys(program)
                    programs[definition] = program  # shared only once settled
                else:
                    unshared.add(definition)
        return program if program is not None else _MOTO_ENTRYPOINT(self)

    ExecutionWorker._get_evaluation_entrypoint = _get_evaluation_entrypoint  # type: ignore[method-assign]

    def uninstall() -> None:
        ExecutionWorker._get_evaluation_entrypoint = _MOTO_ENTRYPOINT  # type: ignore[method-assign]

    return uninstall
