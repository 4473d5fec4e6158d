"""Per-environment copies of the process-wide state libraries keep, for the local Lambda.

In Lambda every execution environment is its own process, so whatever a library keeps at
module or class level belongs to one environment. The local cloud runs all environments in
one interpreter, with each library imported once, so such state is shared by environments
running at the same moment, which production never does.

powertools' API Gateway resolvers keep the request being resolved on their base class, not
on the resolver: `resolve()` assigns `BaseRouter.current_event` and
`BaseRouter.lambda_context` (aws_lambda_powertools 3.x, event_handler/api_gateway.py), and
routes, `Request` objects and dependencies read them back from there. Two API environments
resolving at once here read whichever event was assigned last: alice's `GET /v1/me` was
answered as bob (tests/unit/test_local_lambda_environments.py makes that interleaving
certain).

Each environment gets a `contextvars.Context` of its own (`new_environment_context`) and
runs its load and every invocation in it; the two attributes become context variables, so
each environment sees its own, from one invocation to the next as in its own process. A
context refuses to be entered twice at once, so an environment running two invocations at
once fails loudly instead of sharing. Context variables set by the layer (powertools
Logger's thread-safe keys) are per environment the same way.

The layer's one powertools Logger keeps its appended keys (`append_keys`, the Lambda context
and correlation id of `inject_lambda_context`) in a dict on its formatter
(`LambdaPowertoolsFormatter.log_format`): in an environment that dict is the environment's
own copy, taken from the shared one at its first use there, so one environment's request id
never shows on another's lines. Outside environments (the local cloud's own threads) it is
the formatter's own, as before.
"""

from __future__ import annotations

import contextvars
import copy
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

_UNSET: Any = object()
PER_ENVIRONMENT_ATTRIBUTES = ("current_event", "lambda_context")
_IN_ENVIRONMENT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "in a local Lambda execution environment", default=False
)


class _PerEnvironment:
    """A class attribute whose value lives in the running environment's context: the same
    descriptor serves reads and writes on the class (from its metaclass) and on instances."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._value: contextvars.ContextVar[Any] = contextvars.ContextVar(
            f"powertools BaseRouter.{name}"
        )

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        value = self._value.get(_UNSET)
        if value is _UNSET:  # as before any resolve(): the class had no such attribute
            raise AttributeError(self._name)
        return value

    def __set__(self, instance: object, value: Any) -> None:
        self._value.set(value)


class _PerEnvironmentCopy:
    """An instance attribute holding a mutable value: outside environments the instance's own
    (kept in its `__dict__`), inside one that environment's copy of it, taken at first use
    (instances are told apart by id: the layer's formatters live as long as the process)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._copies: contextvars.ContextVar[dict[int, Any]] = contextvars.ContextVar(
            f"{name} per environment"
        )

    def _environment_copies(self) -> dict[int, Any]:
        copies = self._copies.get(None)
        if copies is None:
            copies = {}
            self._copies.set(copies)
        return copies

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            shared = instance.__dict__[self._name]
        except KeyError:
            raise AttributeError(self._name) from None
        if not _IN_ENVIRONMENT.get():
            return shared
        copies = self._environment_copies()
        if id(instance) not in copies:
            copies[id(instance)] = copy.copy(shared)
        return copies[id(instance)]

    def __set__(self, instance: object, value: Any) -> None:
        in_environment = _IN_ENVIRONMENT.get()
        if not in_environment or self._name not in instance.__dict__:
            instance.__dict__[self._name] = value  # also a formatter made during a load
        if in_environment:
            self._environment_copies()[id(instance)] = copy.copy(value)


def _install() -> None:
    """Once per process: `BaseRouter.x = ...` is an assignment on the class, which only a
    descriptor on its metaclass sees, so BaseRouter gets a metaclass that has them."""
    meta = type(BaseRouter)
    if getattr(meta, "per_environment", False):
        return
    descriptors = {name: _PerEnvironment(name) for name in PER_ENVIRONMENT_ATTRIBUTES}
    for name, descriptor in descriptors.items():
        type.__setattr__(BaseRouter, name, descriptor)  # instances' reads and writes
    per_environment_meta = type(
        f"PerEnvironment{meta.__name__}",
        (meta,),
        {"per_environment": True, "__slots__": (), **descriptors},
    )
    BaseRouter.__class__ = per_environment_meta  # type: ignore[method-assign]
    type.__setattr__(LambdaPowertoolsFormatter, "log_format", _PerEnvironmentCopy("log_format"))


def new_environment_context() -> contextvars.Context:
    """The context a new execution environment loads and runs its invocations in: empty,
    as a new process's is."""
    _install()
    context = contextvars.Context()
    context.run(_IN_ENVIRONMENT.set, True)
    return context
